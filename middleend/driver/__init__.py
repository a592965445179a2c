"""The driver: the lowering pipeline that runs the passes in order (``lowering``), the
layers as text (``layers``) and the registry of targets (``targets``)."""
