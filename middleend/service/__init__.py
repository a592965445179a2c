"""The middle-end as a service: engine, cache, workers, server and clients."""
