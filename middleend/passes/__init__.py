"""The analyses and transformations that lower a program through the layers, one module per
pass: Layer I in ISL (``layer1``), Layer III data (``data``), the expected dataflow
(``dataflow``), Layer II schedules and placement (``schedule``, ``placement``), Layer IV
operations (``layer4``), physical accesses (``physical``), the legality check
(``legality``) and loop generation (``astgen``, ``program``). They depend on the IR only."""
