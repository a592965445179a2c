"""What the C-family targets share: expressions, buffer elements and the helper functions
that keep the middle-end's semantics (floor division, wrap-around, checked indices),
spelled per dialect (C99 for the cpu target, CUDA and OpenCL C for the gpu target)."""
