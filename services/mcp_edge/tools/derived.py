"""Output models derived from the domain records they publish, so a record has one definition.

A tool that returns a record as it is (what a forget or a purge did, a retain's screening, a recall's
flags) publishes it through a pydantic model, because the SDK turns the tool's return type into its output
schema. :func:`output_model` builds that model from the record's dataclass: the same fields in the same
order, tuples as lists, nested records as their own derived models, and each field's description taken
from the docstring under it (the one place the field is described, for the code and the schema alike).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import textwrap
import typing
from typing import Any

from pydantic import BaseModel, Field, create_model

_DERIVED: dict[type, type[BaseModel]] = {}
"""Models built so far, by record: a record nested in several outputs has one model (one schema)."""


def attribute_docs(record: type) -> dict[str, str]:
    """The docstring written under each field of ``record``'s class body, by field name."""
    source = textwrap.dedent(inspect.getsource(record))
    body = next(node for node in ast.parse(source).body if isinstance(node, ast.ClassDef)).body
    docs: dict[str, str] = {}
    for node, after in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = " ".join(inspect.cleandoc(after.value.value).split())
    return docs


def _published(hint: Any) -> Any:
    """The type a field is published as: a tuple as a list, a record as its derived model."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return list[_published(args[0])]  # type: ignore[misc]
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return output_model(hint)
    return hint


def output_model(record: type, name: str = "") -> type[BaseModel]:
    """The output model of the dataclass ``record``, named ``name`` or after it (``PurgeResult`` ->
    ``PurgeOutput``): its fields, defaults and docstrings. Filled from a record with
    ``model_validate(record, from_attributes=True)``."""
    if record in _DERIVED:
        return _DERIVED[record]
    hints = typing.get_type_hints(record)
    docs = attribute_docs(record)
    fields: dict[str, Any] = {}
    for field in dataclasses.fields(record):
        published = _published(hints[field.name])
        described = docs.get(field.name)
        if field.default is not dataclasses.MISSING:
            default = list(field.default) if isinstance(field.default, tuple) else field.default
            fields[field.name] = (published, Field(default=default, description=described))
        elif field.default_factory is not dataclasses.MISSING:
            fields[field.name] = (
                published,
                Field(default_factory=field.default_factory, description=described),
            )
        else:
            fields[field.name] = (published, Field(description=described))
    model = create_model(  # type: ignore[call-overload]
        name or f"{record.__name__.removesuffix('Result')}Output",
        __doc__=" ".join((record.__doc__ or record.__name__).split()),
        __module__=__name__,
        **fields,
    )
    _DERIVED[record] = model
    return typing.cast(type[BaseModel], model)
