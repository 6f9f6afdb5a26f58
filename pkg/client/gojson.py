"""JSON written byte for byte as Go's ``encoding/json`` writes a decoded document.

The API server keeps a ``runtime.RawExtension`` (a ControllerRevision's ``data``) as the bytes it was sent.
A merge patch of such an object (the garbage collector's removal of an owner reference) decodes the whole
object into Go maps and encodes it again, and the server then compares the new ``data`` bytes with the
stored ones: a field declared immutable must not change by one byte. Bodies written the way Go writes a
map (keys sorted, no spaces, ``<``, ``>``, ``&``, U+2028 and U+2029 escaped, other text as UTF-8) survive
that round trip unchanged, as KubeVirt's own revisions do.
"""

from __future__ import annotations

import json
from typing import Any

# Go escapes these even inside strings, so that JSON can sit in HTML; they occur only inside strings.
_GO_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def dumps(document: Any) -> bytes:
    """``document`` encoded as Go's ``json.Marshal`` encodes the same value held in maps and slices."""
    text = json.dumps(document, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return text.translate(_GO_ESCAPES).encode()


def dumps_indented(document: Any, indent: int = 4) -> bytes:
    """``document`` as Go's ``json.MarshalIndent(v, "", <indent spaces>)`` writes a struct: keys in the
    order given (a struct's field order), the same escapes as :func:`dumps`."""
    text = json.dumps(document, indent=indent, ensure_ascii=False)
    return text.translate(_GO_ESCAPES).encode()
