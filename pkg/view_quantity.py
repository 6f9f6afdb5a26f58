"""A Kubernetes quantity read from a JSON object as whole bytes, its errors naming the field.

For readers of raw objects (the launcher's requests, virt-handler's VMIs) that do not load the typed API;
the quantity parser itself is imported only when a value needs parsing.
"""

from __future__ import annotations

from kubevirt_api.view import View


def quantity(parent: View, key: str) -> int:
    """The Kubernetes quantity at ``key`` in bytes (0 when absent); a bad or negative one is ``parent``'s
    error naming the field."""
    value = parent.get(key)
    if value is None or value == "":
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    else:
        # Imported here: the typed API is heavy, and most objects size nothing.
        from kubevirt_api.resource import Quantity

        try:
            size = Quantity(str(value)).value()
        except ValueError as err:
            raise parent.fail(key, f"not a quantity: {str(value)[:80]!r}") from err
    if size < 0:
        raise parent.fail(key, "must not be negative")
    return size
