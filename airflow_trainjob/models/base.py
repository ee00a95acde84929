"""Base classes and field types shared by the models.

Go's ``int32``/``int64`` pointer fields become optional Python ints with the same bounds.
Integers given as strings (``"3"``, what a Jinja template renders to) are accepted; booleans are
not, because ``True`` silently becoming ``1`` replica hides a mistake.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.alias_generators import to_camel

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def _refuse_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("must be an integer, not a boolean")
    return value


_StrictishInt = Annotated[int, BeforeValidator(_refuse_bool)]

NonNegativeInt32 = Annotated[_StrictishInt, Field(ge=0, le=INT32_MAX)]
PositiveInt32 = Annotated[_StrictishInt, Field(ge=1, le=INT32_MAX)]
PositiveInt64 = Annotated[_StrictishInt, Field(ge=1, le=INT64_MAX)]
Port = Annotated[_StrictishInt, Field(ge=1, le=65535)]


class WriteModel(BaseModel):
    """A part of a spec we send: unknown fields are refused, so a typo cannot be silently dropped."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        use_enum_values=True,
        validate_default=True,
    )

    def to_api(self) -> dict[str, Any]:
        """The API's JSON form: camelCase keys, no ``None`` values."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ReadModel(BaseModel):
    """A part of a status we read: fields a newer controller adds are kept, never an error."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")
