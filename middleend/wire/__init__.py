"""The wire format (``proto/middleend.proto``, package ``middleend.v1``) and the converters
between it and the Python API. ``v1`` holds the generated stubs (see scripts/gen_proto.sh).
"""

from .decode import Limits, decode_function, decode_request, parse_request
from .encode import encode_function, encode_request
from .v1 import middleend_pb2 as pb

__all__ = ["Limits", "decode_function", "decode_request", "encode_function", "encode_request",
           "parse_request", "pb"]
