"""The JSON bodies of the REST API under /api/v1/, as pydantic models for its OpenAPI document.

The routes build plain dicts (a flamegraph can hold millions of numbers, too many to validate per
request); these models only describe them, and `tests/e2e/test_openapi.py` checks real answers
against the document. Values are signed: a comparison (`go tool pprof -diff_base`) has negative ones.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TenantBody(_Strict):
    name: str
    series: int = Field(description="series in the index; 0 for a tenant without data yet")
    default: bool = Field(description="the tenant of a request without X-Scope-OrgID")


class TenantsAnswer(_Strict):
    status: Literal["success"]
    data: list[TenantBody] = Field(description="those the credential lists or, for one that may read every "
                                   "tenant, every tenant with data; the default first")


class ProfileTypeBody(_Strict):
    id: str = Field(description="name:sample_type:sample_unit:period_type:period_unit")
    name: str
    sample_type: str
    sample_unit: str
    period_type: str
    period_unit: str


class ProfileTypesAnswer(_Strict):
    status: Literal["success"]
    data: list[ProfileTypeBody]


class NamesAnswer(_Strict):
    status: Literal["success"]
    data: list[str]


class SeriesAnswer(_Strict):
    status: Literal["success"]
    data: list[dict[str, str]] = Field(description="the label set of each series")


class PointsBody(_Strict):
    labels: dict[str, str] = Field(description="the group_by labels of this series of points")
    points: list[tuple[int, float]] = Field(description="[epoch milliseconds at the start of the step, value]")


class QueryRangeAnswer(_Strict):
    series: list[PointsBody]
    warnings: list[str] = Field(description="what the answer may hide, e.g. a group_by label no series has")


BINARIES = ("per name: the file of the mapping its frames were executed from (\"\" when unknown); present only "
            "when the profiles' mappings name some")


class FlamegraphBody(_Strict):
    names: list[str]
    levels: list[list[int]] = Field(description="per depth, per node: x_delta, total, self, name index")
    total: int
    max_self: int = Field(description="the largest absolute self value")
    binaries: list[str] | None = Field(None, description=BINARIES)


class TopRow(_Strict):
    name: str
    self_value: int = Field(alias="self")
    total: int


class TopBody(_Strict):
    total: int
    entries: list[TopRow]


class TreeNode(_Strict):
    name: str
    self_value: int = Field(alias="self")
    total: int
    children: list[TreeNode]


class QueryAnswer(_Strict):
    profile_type: str
    profiles: int = Field(description="how many stored profiles were merged")
    flamegraph: FlamegraphBody | None = Field(None, description="with format=flamegraph (the default)")
    top: TopBody | None = Field(None, description="with format=top")
    tree: TreeNode | None = Field(None, description="with format=tree")
    partial: bool = Field(False, description="some frames could not be symbolized (the symbolizer was "
                          "unavailable) and are shown as [file] 0x… addresses")
    warnings: list[str] = Field([], description="why the answer is partial")


class DiffFlamegraphBody(_Strict):
    names: list[str]
    levels: list[list[int]] = Field(
        description="per depth, per node: left x_delta, total, self, right x_delta, total, self, name index")
    total: int
    max_self: int
    left_ticks: int
    right_ticks: int
    binaries: list[str] | None = Field(None, description=BINARIES)


class DiffAnswer(_Strict):
    flamegraph: DiffFlamegraphBody


class AnalyzeAnswer(_Strict):
    blocks: int = Field(description="blocks holding the selected profiles in range; a query fetches each whole")
    series: int = Field(description="selected series with profiles in range")
    profiles: int = Field(description="their profiles in range (matchers on sample labels apply only when read)")
    block_bytes: int = Field(description="the size of those blocks' objects")
    max_bytes: int = Field(description="the tenant's --query.max-bytes; a query over it is refused (0: no limit)")
