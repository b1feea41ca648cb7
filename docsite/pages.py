"""Reference pages written from the code at build time, so they cannot fall behind it: every
SCHEDULING_* setting (scheduling.rows.conf), every management command's --help, and the REST
API from its OpenAPI schema (drf-spectacular, rendered by essentials-openapi).

The settings page needs nothing but the source; the other two set Django up with the demo's
settings (project.settings, which connects to nothing at import).
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from contextlib import redirect_stdout
from dataclasses import fields
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]
CONF = ROOT / "scheduling" / "rows" / "conf.py"
COMMAND_FOLDERS = (
    ("scheduling", ROOT / "scheduling" / "management" / "commands"),
    ("scheduling.recurring", ROOT / "scheduling" / "recurring" / "management" / "commands"),
)
# What each validator of scheduling.rows.conf accepts, in words.
KINDS = {
    "a_count": "an integer ≥ 1",
    "a_duration": "seconds > 0",
    "a_delay": "seconds ≥ 0",
    "a_name": "a non-empty name",
    "a_string": "a string",
    "a_flag": "`True` or `False`",
    "a_rate": "`<n>/s`, `/min`, `/hour` or `/day`",
    "rate_limits": "a dict: model label → rate or `None`",
    "partition_intervals": 'a dict: model label → `"<N>d"` or `"<N>h"`',
    "task_patterns": "a list of task names or patterns",
    "a_trace_parent": '`"link"` or `"child"`',
    "a_trace_url": 'a URL with `{trace_id}` in it, or `""`',
}
EMPTY = {"rate_limits": "{}", "partition_intervals": "{}", "task_patterns": "[]"}
# The two settings read outside SchedulingSettings (scheduling.rows.setting_names.OTHER_NAMES).
OTHERS = {
    "SCHEDULING_DATABASES": (
        "{}",
        "a dict: app label → database alias",
        "A domain's scheduled rows on a database of their own: [databases](../databases.md).",
    ),
    "SCHEDULING_READ_REPLICAS": (
        "{}",
        "a dict: write alias → list of replica aliases",
        "Reads of GET requests on streaming standbys: [read replicas](../read-replicas.md).",
    ),
}


def public_names(module: str) -> list[str]:
    """A public module's `__all__`, read from its source (no import: Django need not be set
    up)."""
    relative = Path(*module.split("."))
    path = ROOT / relative / "__init__.py"
    if not path.exists():
        path = ROOT / relative.with_suffix(".py")
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            return list(ast.literal_eval(node.value))
    raise LookupError(f"{module} has no __all__")


def public_modules() -> list[str]:
    for node in ast.parse((ROOT / "scheduling" / "__init__.py").read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "PUBLIC_MODULES"
            for target in node.targets
        ):
            return list(ast.literal_eval(node.value))
    raise LookupError("scheduling has no PUBLIC_MODULES")


def api_blocks(module: str, names: list[str]) -> list[str]:
    """One mkdocstrings block per name: the name itself always shows (its signature, its
    docstring if any); its members show where they have a docstring."""
    lines = []
    for name in names:
        lines += [f"::: {module}.{name}", "    options:", "      heading_level: 3", ""]
    return lines


def facade_page() -> str:
    return "\n".join(
        [
            "# The facade: `scheduling`",
            "",
            "A host imports from here: `from scheduling import ScheduledEvent, handle_once`. Every",
            "name below is public and kept across releases; the modules it comes from (the wings",
            "`scheduling.time`, `.rows`, `.delivery`, `.ops`) are internal and may move. Models are",
            "also importable from `scheduling.models`, where Django looks for them; what a host",
            "needs for its admin, REST API, tests and migrations is in the",
            "[public modules](modules.md). `event_failed` and `event_gave_up`:",
            "[signals](signals.md). Written from the docstrings at each build.",
            "",
            "## Names",
            "",
            *api_blocks("scheduling", public_names("scheduling")),
        ]
    )


def modules_page() -> str:
    lines = [
        "# Public modules",
        "",
        "Besides the [facade](facade.md), these modules at the top of the package are public",
        "(`scheduling.PUBLIC_MODULES`): each re-exports what a host needs for one concern. The",
        "modules they take their names from are internal. `scheduling.quiet`,",
        "`scheduling.partitions` and `scheduling.migration_operations` are named by hosts' own",
        "migrations, so they stay importable for good. Written from the docstrings at each build.",
        "",
    ]
    for module in public_modules():
        lines += [
            f"## `{module}`",
            "",
            f"::: {module}",
            "    options:",
            "      show_root_heading: false",
            "      members: false",
            "",
            *api_blocks(module, public_names(module)),
        ]
    return "\n".join(lines)


def settings_page() -> str:
    """Every SCHEDULING_* setting: its default, what it accepts and what it means, from the
    fields of SchedulingSettings and the comments written beside or above each."""
    from scheduling.rows.conf import SchedulingSettings

    defaults = {
        f"SCHEDULING_{each.name.upper()}": each.default for each in fields(SchedulingSettings)
    }
    bounds = {
        f"SCHEDULING_{each.name.upper()}": each.metadata.get("most")
        for each in fields(SchedulingSettings)
    }
    rows = []
    for name, validator, meaning in setting_fields(CONF.read_text()):
        shown = EMPTY.get(validator) or f"`{shown_value(defaults[name])}`"
        accepts = KINDS[validator]
        if bounds[name] is not None:
            accepts = f"{accepts}, at most {shown_value(bounds[name])}"
        rows.append(f"| `{name}` | {shown} | {accepts} | {meaning} |")
    for name, (default, kind, meaning) in OTHERS.items():
        rows.append(f"| `{name}` | `{default}` | {kind} | {meaning} |")
    rows.sort(key=lambda row: row.split("`")[1])
    return "\n".join(
        [
            "# Settings",
            "",
            "Every `SCHEDULING_*` setting the framework reads, with its default. Each default",
            "works: a host sets only what it wants to change. A value of the wrong kind stops",
            "`manage.py check`, `migrate`, workers and beat with one line naming the setting and",
            "the accepted form (`scheduling.E001`); a `SCHEDULING_*` name the framework does not",
            "know is reported with the closest known one (`scheduling.W006`). A model's own class",
            "attributes (`max_attempts`, `retry_backoff`, `handling_timeout`, ...) override the",
            "settings of the same name for that model.",
            "",
            "This page is written from the code at each build.",
            "",
            "| setting | default | accepts | meaning |",
            "| --- | --- | --- | --- |",
            *rows,
            "",
        ]
    )


def shown_value(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value)


def setting_fields(source: str) -> list[tuple[str, str, str]]:
    """(SCHEDULING_ name, validator, meaning) for each field of
    SchedulingSettings. A field's meaning is its trailing comment, else the comment lines right
    above it; a field with neither shares the meaning of the field before it."""
    comments: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = token.string.lstrip("#").strip()
    lines = source.splitlines()
    tree = ast.parse(source)
    cls = next(
        node
        for node in tree.body
        if isinstance(node, ast.ClassDef) and node.name == "SchedulingSettings"
    )
    found = []
    meaning = ""
    for node in cls.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        call = node.value
        assert isinstance(call, ast.Call), ast.dump(node)
        assert len(call.args) in (2, 3), ast.dump(node)  # default, validator[, bound]
        validator = call.args[1]
        assert isinstance(validator, ast.Name)
        own = comments.get(node.end_lineno or node.lineno)
        above: list[str] = []
        line = node.lineno - 1
        while line in comments and lines[line - 1].lstrip().startswith("#"):
            above.insert(0, comments[line])
            line -= 1
        meaning = own or " ".join(above) or meaning
        name = f"SCHEDULING_{node.target.id.upper()}"
        found.append((name, validator.id, sentence(meaning)))
    return found


def sentence(text: str) -> str:
    first = text.split(" ", 1)[0]
    if "." not in first and "/" not in first:
        text = text[:1].upper() + text[1:]
    return text if text.endswith((".", ")")) else f"{text}."


def setup_django() -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    django.setup()


def commands_page() -> str:
    """Each management command of the framework with its --help, as `manage.py help` shows it."""
    from django.core.management import load_command_class

    setup_django()
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: the same page everywhere
    parts = [
        "# Management commands",
        "",
        "The framework's commands, with their `--help` (written from the code at each build).",
        "`recurring_repair` comes with the optional app `scheduling.recurring`. Django's own",
        "options (`--settings`, `--verbosity`, ...) are left out below.",
        "",
    ]
    for app, folder in COMMAND_FOLDERS:
        for path in sorted(folder.glob("*.py")):
            if path.name.startswith("_"):
                continue
            command = load_command_class(app, path.stem)
            parser = command.create_parser("manage.py", path.stem)
            parts += [
                f"## {path.stem}",
                "",
                "```text",
                own_options(parser.format_help()),
                "```",
                "",
            ]
    return "\n".join(parts)


DJANGO_OPTIONS = re.compile(
    r"\n  (--version|-v \{0,1,2,3\}|--settings|--pythonpath|--traceback|--no-color"
    r"|--force-color|--skip-checks)(?=[ ,\n]).*?(?=\n  -|\Z)",
    re.S,
)


def own_options(text: str) -> str:
    """--help without the options every Django command has, and their placeholders in usage."""
    text = DJANGO_OPTIONS.sub("", text.rstrip())
    usage, _, rest = text.partition("\n\n")
    usage = re.sub(
        r" \[(--version|-v \{0,1,2,3\}|--settings SETTINGS|--pythonpath PYTHONPATH|--traceback"
        r"|--no-color|--force-color|--skip-checks)\]",
        "",
        usage,
    )
    usage = re.sub(r"\n\s+(?=\n|$)", "", usage)
    return f"{usage}\n\n{rest}"


def openapi_schema() -> dict[str, Any]:
    """The OpenAPI schema of `include("scheduling.api.urls")`, its paths relative to where the
    host includes it; the generic per-model routes shown for the optional apps' models only."""
    setup_django()
    from drf_spectacular.generators import SchemaGenerator

    with redirect_stdout(io.StringIO()):
        schema: dict[str, Any] = SchemaGenerator(urlconf="scheduling.api.urls").get_schema(
            request=None, public=True
        )
    schema["paths"] = {
        path: item
        for path, item in schema["paths"].items()
        if not path.startswith("/events/") or path.startswith("/events/scheduling_")
    }
    return schema


def rest_api_page() -> str:
    """The REST API from its OpenAPI schema: per path and method its parameters, body and
    answers, then each schema's fields. Plain Markdown: no script renders it."""
    schema = openapi_schema()
    intro = [
        "# REST API",
        "",
        '!!! note "Paths are relative to where your project includes the API"',
        "    Every path below follows the prefix under which the host's URLconf includes",
        '    `scheduling.api.urls`. With `path("api/scheduling/", include("scheduling.api.urls"))`',
        "    (the [tutorial](../adding-scheduling.md)), `/events/...` is served at",
        "    `/api/scheduling/events/...`; the demo site includes it under `api/`, so there it",
        "    is `/api/events/...`.",
        "",
        "`/events/<app_label>/<model_name>/` and its sub-paths exist for every scheduled model:",
        "they are shown here for the optional apps' own models",
        "(`scheduling_recurring.scheduledoccurrence`, `scheduling_jobs.scheduledjobrun`); a",
        "host's model has the same under its own label, with its own fields and foreign-key",
        "filters. `/jobs/` comes with `scheduling.jobs`, `/schedules/` with",
        "`scheduling.recurring`. Every request needs a signed-in user (a session, or",
        "`Authorization: Token <key>`) and the model permission [security](../security.md)",
        "lists. This page is written from the OpenAPI schema (drf-spectacular) at each build.",
        "",
    ]
    return "\n".join([*intro, *operations(schema), *schemas(schema)]) + "\n"


METHODS = ("get", "post", "put", "patch", "delete")


def operations(schema: dict[str, Any]) -> list[str]:
    lines = []
    for path, item in schema["paths"].items():
        lines += [f"## `{path}`", ""]
        for method in METHODS:
            if method not in item:
                continue
            operation = item[method]
            lines += [f"### {method.upper()} `{path}`", ""]
            if operation.get("description"):
                lines += [one_line(operation["description"]), ""]
            parameters = operation.get("parameters", [])
            if parameters:
                lines += [
                    "| parameter | in | type | required | meaning |",
                    "| --- | --- | --- | --- | --- |",
                ]
                for each in parameters:
                    lines.append(
                        f"| `{each['name']}` | {each['in']} | {type_of(each.get('schema', {}))} "
                        f"| {'yes' if each.get('required') else 'no'} "
                        f"| {one_line(each.get('description', ''))} |"
                    )
                lines.append("")
            body = operation.get("requestBody", {}).get("content", {})
            if body:
                first = next(iter(body.values())).get("schema", {})
                kinds = ", ".join(f"`{kind}`" for kind in body)
                lines += [f"Body: {type_of(first)} ({kinds}).", ""]
            answers = []
            for status, answer in operation.get("responses", {}).items():
                content = answer.get("content", {})
                shown = type_of(next(iter(content.values())).get("schema", {})) if content else ""
                answers.append(f"{status}{f' {shown}' if shown else ''}")
            if answers:
                lines += [f"Answers: {'; '.join(answers)}.", ""]
    return lines


def schemas(schema: dict[str, Any]) -> list[str]:
    lines = ["## Schemas", ""]
    for name, shape in schema.get("components", {}).get("schemas", {}).items():
        lines += [f"### {name} {{ #schema-{name.lower()} }}", ""]
        if shape.get("description"):
            lines += [one_line(shape["description"]), ""]
        if "enum" in shape:
            values = ", ".join(f"`{value}`" for value in shape["enum"] if value not in ("", None))
            lines += [f"One of: {values}.", ""]
        properties = shape.get("properties", {})
        if properties:
            required = set(shape.get("required", []))
            lines += ["| field | type | required | meaning |", "| --- | --- | --- | --- |"]
            for field_name, field_shape in properties.items():
                flags = " (read-only)" if field_shape.get("readOnly") else ""
                lines.append(
                    f"| `{field_name}` | {type_of(field_shape)}{flags} "
                    f"| {'yes' if field_name in required else 'no'} "
                    f"| {one_line(field_shape.get('description', ''))} |"
                )
            lines.append("")
    return lines


def type_of(shape: dict[str, Any]) -> str:
    if "$ref" in shape:
        name = shape["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#schema-{name.lower()})"
    for combined in ("allOf", "oneOf", "anyOf"):
        if combined in shape:
            return " or ".join(type_of(each) for each in shape[combined])
    kind = shape.get("type", "object")
    if kind == "array":
        return f"array of {type_of(shape.get('items', {}))}"
    if shape.get("format"):
        kind = f"{kind} ({shape['format']})"
    if shape.get("nullable"):
        kind = f"{kind}, nullable"
    return kind


def one_line(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")
