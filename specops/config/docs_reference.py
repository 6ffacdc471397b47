"""Reference tables for docs/, generated from the models so the documentation cannot drift from the code.

`python -m specops.config.docs_reference` rewrites the generated blocks in docs/*.md; a unit test fails when a
block is stale.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from specops.config.engine_spec import EngineSpec
from specops.config.inventory import HostSpec
from specops.config.k8s import K8sSettings, Volume
from specops.config.notify import Notify
from specops.config.profile import Drain, Profile, Readiness, Server, Smoke, Speculative
from specops.errors import EXIT_CODE_MEANINGS

BEGIN = "<!-- BEGIN GENERATED: {name} -->"
END = "<!-- END GENERATED: {name} -->"


def _type_name(annotation: Any) -> str:
    text = re.sub(r"specops\.config\.\w+\.", "", str(annotation).replace("typing.", ""))
    text = re.sub(r"Annotated\[(\w+), [^\]]*\]", r"\1", text)
    text = re.sub(r"<class '(?:[\w.]+\.)?(\w+)'>", r"\1", text)
    text = re.sub(r"Optional\[(.*)\]$", r"\1 (optional)", text)
    text = text.replace(" | None", " (optional)").replace("Literal[", "one of [")
    return text.replace("|", "\\|")


def _default(field: Any) -> str:
    if field.is_required():
        return "**required**"
    value = field.default if field.default is not PydanticUndefined else field.default_factory()
    if isinstance(value, BaseModel):
        return "(table)"
    return f"`{value!r}`" if value not in (None, {}, []) else "-"


def field_table(model: type[BaseModel], skip: tuple[str, ...] = ()) -> str:
    """A markdown table: key, type, default, meaning."""
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        if name in skip:
            continue
        description = (field.description or "").replace("|", "\\|")
        rows.append(f"| `{name}` | {_type_name(field.annotation)} | {_default(field)} | {description} |")
    return "\n".join(rows)


def exit_code_table() -> str:
    rows = ["| code | meaning |", "|---|---|"]
    rows += [f"| {int(code)} | {meaning} |" for code, meaning in EXIT_CODE_MEANINGS.items()]
    return "\n".join(rows)


GENERATORS = {
    "host-keys": lambda: field_table(HostSpec, skip=("name",)),
    "profile-keys": lambda: field_table(Profile, skip=("name",)),
    "profile-speculative": lambda: field_table(Speculative),
    "profile-server": lambda: field_table(Server),
    "profile-readiness": lambda: field_table(Readiness),
    "profile-smoke": lambda: field_table(Smoke),
    "profile-drain": lambda: field_table(Drain),
    "engine-keys": lambda: field_table(EngineSpec, skip=("name",)),
    "k8s-keys": lambda: field_table(K8sSettings),
    "k8s-volume": lambda: field_table(Volume),
    "notify-keys": lambda: field_table(Notify),
    "exit-codes": exit_code_table,
}


def refresh(text: str) -> str:
    """Replace every generated block in a markdown text with its current content."""
    for name, generate in GENERATORS.items():
        pattern = re.compile(re.escape(BEGIN.format(name=name)) + r".*?" + re.escape(END.format(name=name)), re.S)
        block = f"{BEGIN.format(name=name)}\n{generate()}\n{END.format(name=name)}"
        text = pattern.sub(block.replace("\\", "\\\\"), text)
    return text


def main(folder: str = "docs") -> int:
    for path in sorted(Path(folder).glob("*.md")):
        old = path.read_text(encoding="utf-8")
        new = refresh(old)
        if new != old:
            path.write_text(new, encoding="utf-8")
            print(f"updated {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
