"""Values a session must refuse because they would not read back as written (enums,
dataclasses, datetimes): shared by the integrity tests and the round-trip fuzz."""

from __future__ import annotations

import dataclasses
import datetime
import enum


class Color(enum.Enum):
    RED = "red"
    ONE = 1


class Level(enum.IntEnum):
    HIGH = 3


class Mode(str, enum.Enum):
    FAST = "fast"


@dataclasses.dataclass
class Point:
    x: int


NOW = datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc)
