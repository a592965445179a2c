"""The IR records, at the bottom of the middle-end: element types, typed expressions, the
Layer I objects (params, iterators, buffers, computations) with the scheduling language that
records commands, Layer IV operations, the loop AST every backend consumes, and the errors.
Nothing here imports anything above it (see the import-linter contracts in
``pyproject.toml``)."""
