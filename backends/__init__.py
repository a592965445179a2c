"""Code-generation backends of the middle-end.

Each backend consumes the target-independent loop AST (:mod:`middleend.loopast`) and never
touches islpy, so that a new target only has to know how to print loops and expressions.
"""
