"""Replies built from results that carry the reply's fields under the same names.

Many handlers answer with a message whose every field a domain result (or another layer's reply) already
holds by the same name; copying them here, once, keeps a field added to both from being forgotten in one
handler and spares each handler a list of ``name=result.name`` lines.
"""

from __future__ import annotations

from typing import Any, TypeVar

from google.protobuf.message import Message

M = TypeVar("M", bound=Message)


def reply_from(message: type[M], source: object, **given: Any) -> M:
    """A ``message`` with each field taken from ``source``'s attribute of that name, unless ``given``
    names it. A field ``source`` lacks is an AttributeError: the two have drifted apart."""
    values = {
        name: given[name] if name in given else getattr(source, name)
        for name in message.DESCRIPTOR.fields_by_name
    }
    return message(**values)
