"""Every string field of every kind's spec, found from the JSON schemas (the kind registry, recursively into
nested models, lists, dicts and unions: no hand list of fields), against path and URL attacks (DESIGN.md,
Trust model; docs/spec-confinement.md).

A string field passes only if

- every hostile value is refused by validation with an error at exactly that field (a 422 naming it), and
  where the schema marks the field as confined (``x-reasonlab-confined``), the worker's own resolution of
  a value the spec accepts refuses what a spec cannot see: a symlink in the store pointing out of it, a
  name shadowed by the worker's working directory, a host that resolves to loopback or metadata; or
- it is on ``FREE_TEXT`` with the reason its value cannot reach the file system or the network.

So a path or URL field added later without confinement fails here.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from tests.worker.stores import Stores
from worker.chat_apis.outbound import OutboundRefused, pin
from worker.runtime import confined
from worker.specs import manifests
from worker.specs.confine import ALLOW_ENV, ALLOW_PRIVATE_ENV, SCHEMA_KEY, Refused, confined_fields

ALLOWED_HOST = "api.allowed.test"  # the only host on the allow-list here (never resolved for real)

HOSTILE_PATHS = (
    "/etc/hostname",
    "/proc/self/environ",
    "../../../../etc/passwd",
    "data/../../../etc/passwd",
    "..",
    "~/.ssh/id_rsa",
    "~root/.bashrc",
    ".env",
    "a/.git/config",
    "..\\..\\windows\\win.ini",
    "C:\\Windows\\win.ini",
    "c:/windows/win.ini",
    "file:///etc/passwd",
    "a\x00b",
    "",
)
HOSTILE_URLS = (
    "file:///etc/passwd",
    "gopher://127.0.0.1:6379/_INFO",
    "ftp://api.allowed.test/x",
    "http://127.0.0.1:6379/",
    "http://127.0.0.1:8000/api/v1/health",
    "http://2130706433/",
    "http://0177.0.0.1/",
    "http://0x7f.1/",
    "http://0x7f000001/",
    "http://127.1/",
    "http://127.000.000.001/",
    "http://[::1]:8000/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://[0:0:0:0:0:0:0:1]/",
    "http://[2002:7f00:1::]/",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::ffff:169.254.169.254]/",
    "http://[fd00:ec2::254]/latest/meta-data/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://METADATA.GOOGLE.INTERNAL./",
    "http://100.100.100.200/",
    "http://10.0.0.1/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://0.0.0.0:8000/",
    "http://[::]/",
    "http://localhost:6379/",
    "http://api.localhost/",
    "http://user:pw@api.allowed.test/v1",
    "http://not-allowed.example.org/v1",
    "https://api.allowed.test.evil.example/v1",
)
HOSTILE = HOSTILE_PATHS + HOSTILE_URLS

# Fields whose value is never a path or an address: why each cannot reach the file system or the network.
# A field here must carry no confinement marker, and every entry must still exist.
FREE_TEXT: dict[str, str] = {
    "carma:data.text_field": "a column name: the key read from each row of a JSONL/CSV file of the data store",
    "carma:data.label_field": "a column name: the key read from each row of a JSONL/CSV file of the data store",
    "carma:data.prompt": "prompt text with {text} once, given to the tokenizer",
    "carma:data.hf_splits.[]": "split names: keys of the DatasetDict that load_dataset returned",
    "reasonformer_pretrain:model.skills.[]": "skill labels: the names of reasoning modules and routing targets",
    "reasonformer_pretrain:model.general_skill": "a skill label (one of model.skills)",
    "reasonformer_finetune:model.skills.[]": "skill labels: the names of reasoning modules and routing targets",
    "reasonformer_finetune:model.general_skill": "a skill label (one of model.skills)",
    "reasonformer_finetune:init.pretrain.model.skills.[]": "skill labels: the names of reasoning modules and "
    "routing targets",
    "reasonformer_finetune:init.pretrain.model.general_skill": "a skill label (one of model.skills)",
    "reasonformer_finetune:data.tasks.[]": "task names: looked up in the synthetic suite or the fixed "
    "HUB_TASKS table (each with its own hub id); for jsonl data a label of rows",
    "topk_eval:target.reasonformer.tasks.[]": "task names of the synthetic suite (a lookup in its table)",
    "skillmix:student.endpoint.model": "the model name sent in the JSON body to the endpoint (the URL is checked)",
    "skillmix:grader.endpoint.model": "the model name sent in the JSON body to the endpoint (the URL is checked)",
}


# --- the walk -------------------------------------------------------------------------------------------


class Variant(str):
    """A path step into one variant of a discriminated union: named by its tag, as pydantic's error
    locations name it; a spec reaching it sets the union's discriminator field to the tag."""

    field: str

    def __new__(cls, tag: str, field: str) -> Variant:
        step = super().__new__(cls, tag)
        step.field = field
        return step


def string_fields(schema: dict[str, Any]) -> dict[tuple[str, ...], str | None]:
    """Every string-typed leaf of a JSON schema -> its confinement marker (None: unmarked). ``[]`` is a list
    item, ``{}`` a dict value, ``{key}`` a dict key (JSON object keys are strings),
    a ``Variant`` the variant of a discriminated union."""
    defs = schema.get("$defs", {})
    found: dict[tuple[str, ...], str | None] = {}

    def walk(node: dict[str, Any], path: tuple[str, ...], seen: frozenset[str]) -> None:
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[-1]
            if name not in seen:
                walk(defs[name], path, seen | {name})
            return
        discriminator = node.get("discriminator", {})
        for tag, tagged in discriminator.get("mapping", {}).items():
            walk({"$ref": tagged}, (*path, Variant(tag, discriminator["propertyName"])), seen)
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(key, []) if "mapping" not in discriminator else []:
                walk(sub, path, seen)
        kind = node.get("type")
        types = kind if isinstance(kind, list) else [kind]
        if "object" in types:
            for name, sub in node.get("properties", {}).items():
                if path and isinstance(path[-1], Variant) and name == path[-1].field:
                    continue  # the discriminator: place() sets it to the variant's tag
                walk(sub, (*path, name), seen)
            extra = node.get("additionalProperties")
            if isinstance(extra, dict):
                found[(*path, "{key}")] = None
                walk(extra, (*path, "{}"), seen)
        if "array" in types:
            if isinstance(node.get("items"), dict):
                walk(node["items"], (*path, "[]"), seen)
            for item in node.get("prefixItems", []):
                walk(item, (*path, "[]"), seen)
        if "string" in types or ("enum" in node and any(isinstance(v, str) for v in node["enum"])):
            found.setdefault(path, node.get(SCHEMA_KEY))

    walk(schema, (), frozenset())
    return found


def place(path: tuple[str, ...], value: str) -> tuple[dict[str, Any], tuple[str | int, ...]]:
    """A spec holding ``value`` at ``path`` and the error location that names it."""

    def build(rest: tuple[str, ...]) -> tuple[Any, tuple[str | int, ...]]:
        if not rest:
            return value, ()
        head, tail = rest[0], rest[1:]
        if head == "{key}":
            return {value: "1GiB"}, (value, "[key]")
        inner, loc = build(tail)
        if isinstance(head, Variant):
            return {**inner, head.field: str(head)}, (str(head), *loc)
        if head == "[]":
            return [inner], (0, *loc)
        if head == "{}":
            return {"cpu": inner}, ("cpu", *loc)
        return {head: inner}, (head, *loc)

    spec, loc = build(path)
    return spec, loc


def error_locs(spec_class: type[BaseModel], spec: dict[str, Any]) -> list[tuple[str | int, ...]]:
    try:
        spec_class.model_validate(spec)
    except ValidationError as exc:
        return [tuple(e["loc"]) for e in exc.errors()]
    return []


def all_fields() -> list[tuple[str, tuple[str, ...], str | None]]:
    return [
        (kind, path, how)
        for kind, declared in manifests().items()
        for path, how in string_fields(declared.spec.model_json_schema()).items()
    ]


FIELDS = all_fields()


@pytest.fixture(autouse=True)
def policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_ENV, ALLOWED_HOST)
    monkeypatch.delenv(ALLOW_PRIVATE_ENV, raising=False)


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing here may resolve or connect: a check that would is a failure, not a network call."""

    def refuse(*args: object, **kwargs: object) -> Any:
        raise AssertionError(f"a network call in a confinement test: {args}")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_the_walk_finds_the_fields_the_issue_names() -> None:
    names = {f"{kind}:{'.'.join(path)}" for kind, path, _ in FIELDS}
    assert {
        "skillmix:data.topics",
        "skillmix:data.skills",
        "skillmix:cache.dir",
        "skillmix:student.endpoint.url",
        "skillmix:grader.endpoint.url",
        "skillmix:student.name",
        "carma:data.path",
        "topk_eval:target.hf.choices_path",
        "reasonformer_finetune:init.path",
    } <= names
    assert len(FIELDS) > 60  # enums and free text included: every string the schemas hold


@pytest.mark.parametrize(("kind", "path", "how"), FIELDS, ids=[f"{k}:{'.'.join(p)}" for k, p, _ in FIELDS])
def test_every_string_field_refuses_paths_and_urls_or_is_justified_free_text(
    kind: str, path: tuple[str, ...], how: str | None
) -> None:
    name = f"{kind}:{'.'.join(path)}"
    spec_class = manifests()[kind].spec
    accepted = []
    for value in HOSTILE:
        spec, loc = place(path, value)
        if loc not in error_locs(spec_class, spec):
            accepted.append(value)
    if name in FREE_TEXT:
        assert how is None, f"{name} is marked {how!r} yet listed as free text"
        return
    assert not accepted, (
        f"{name} accepts {accepted[:4]}: confine it (worker.specs.confine: DataPath, ModelName, "
        "EndpointUrl, ...) or, if its text never reaches a file or the network, list it in FREE_TEXT "
        "with the reason"
    )


def test_free_text_entries_name_existing_fields() -> None:
    names = {f"{kind}:{'.'.join(path)}" for kind, path, _ in FIELDS}
    assert set(FREE_TEXT) <= names, set(FREE_TEXT) - names


def test_the_schema_marks_are_what_tools_read() -> None:
    marked = {
        f"{kind}:{dotted}": how
        for kind, declared in manifests().items()
        for dotted, how in confined_fields(declared.spec.model_json_schema()).items()
    }
    walked = {f"{kind}:{'.'.join(path)}": how for kind, path, how in FIELDS if how is not None}
    assert marked == walked
    assert marked["skillmix:grader.endpoint.url"] == "url"
    assert marked["skillmix:data.topics"] == "data"


# --- what only the worker can see: its stores, its working directory, DNS --------------------------------


@pytest.fixture
def escapes(stores: Stores, tmp_path: Path) -> Iterator[Path]:
    """Stores whose entries point out of them, an outside folder that looks like a model, and a working
    directory holding a folder named like a hub id."""
    outside = tmp_path / "outside"
    (outside / "org" / "name").mkdir(parents=True)
    (outside / "config.json").write_text("{}")
    (outside / "secret.txt").write_text("not yours\n")
    (stores.data / "link").symlink_to(outside)  # a folder link out of the data store
    (stores.data / "topics.txt").symlink_to(outside / "secret.txt")  # a file link out of it
    (stores.data / "inside.txt").write_text("gardening\n")
    (stores.models / "link").symlink_to(outside)
    (stores.cache / "skillmix").mkdir()
    (stores.cache / "skillmix" / "link").symlink_to(outside)
    cwd = os.getcwd()
    os.chdir(outside)  # "org/name" now exists in the worker's working directory
    try:
        yield outside
    finally:
        os.chdir(cwd)


def _resolve_to(address: str) -> Callable[[str, int], list[str]]:
    def resolve(host: str, port: int) -> list[str]:
        assert host == ALLOWED_HOST, host
        return [address]

    return resolve


def _worker_refusals(how: str, field: str) -> list[Callable[[], object]]:
    """Calls that must each raise: the worker's check for a field marked ``how``, fed values the spec
    accepts but the worker must still refuse."""
    if how == "data":
        return [
            lambda: confined.data_file("link/secret.txt", field),
            lambda: confined.data_file("topics.txt", field),
        ]
    if how == "model":
        return [lambda: confined.model_folder("link", field)]
    if how == "model-or-hub":
        return [lambda: confined.model_name("link", field), lambda: confined.model_name("org/name", field)]
    if how == "hub-dataset":
        return [lambda: confined.hub_dataset("org/name", field)]
    if how == "cache-name":
        return [lambda: confined.cache_folder("link", field, "skillmix")]
    if how == "url":
        url = f"http://{ALLOWED_HOST}:8080/v1"
        return [
            lambda address=address: pin(url, _resolve_to(address))  # type: ignore[misc]
            for address in ("127.0.0.1", "169.254.169.254", "10.1.2.3", "::1", "fd00:ec2::254", "0.0.0.0")
        ]
    raise AssertionError(f"no worker-side check for fields marked {how!r}: add one here")


# "name" marks a bare name (letters, digits, . _ -: no '/', ':' or '..'; datasets' configuration name):
# the spec-level refusal of every hostile value above is its whole confinement.
SPEC_ONLY = frozenset({"name"})
MARKED = [(kind, path, how) for kind, path, how in FIELDS if how is not None and how not in SPEC_ONLY]


@pytest.mark.parametrize(("kind", "path", "how"), MARKED, ids=[f"{k}:{'.'.join(p)}" for k, p, _ in MARKED])
@pytest.mark.usefixtures("escapes")
def test_the_worker_refuses_what_the_spec_cannot_see(kind: str, path: tuple[str, ...], how: str) -> None:
    field = ".".join(p for p in path if p not in ("[]", "{}"))
    for call in _worker_refusals(how, field):
        with pytest.raises((Refused, OutboundRefused)) as info:
            call()
        if isinstance(info.value, Refused):
            assert str(info.value).startswith(f"{field}: "), info.value


@pytest.mark.usefixtures("escapes")
def test_what_is_inside_the_stores_is_reached(stores: Stores) -> None:
    assert confined.data_file("inside.txt", "data.topics") == (stores.data / "inside.txt").resolve()
    (stores.models / "mine").mkdir()
    assert confined.model_folder("mine", "init.path") == (stores.models / "mine").resolve()
    assert confined.model_name("mine", "student.name") == "mine"
    assert confined.model_name("Qwen/Qwen1.5-MoE-A2.7B-Chat", "student.name") == "Qwen/Qwen1.5-MoE-A2.7B-Chat"
    assert confined.model_name("smollm2-135m", "student.name", ["smollm2-135m"]) == "smollm2-135m"
    assert (
        confined.cache_folder("mine", "cache.dir", "skillmix")
        == (stores.cache / "skillmix" / "mine").resolve()
    )
    assert confined.cache_folder(None, "cache.dir", "skillmix") == stores.cache / "skillmix"
    target = pin(f"https://{ALLOWED_HOST}/v1", _resolve_to("93.184.216.34"))
    assert [str(a) for a in target.addresses] == ["93.184.216.34"] and target.target.host == ALLOWED_HOST
