"""Check YAML data against a JSON Schema (draft 2020-12) and report the first failure in the file.

jsonschema does the checking; this module only turns its errors into one line a user can act on:
the key path, the line, and what was expected. Unknown keys get a did-you-mean.
"""

import difflib
import json
from functools import lru_cache
from importlib import resources

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from ..options import QUANTIZATION
from .yaml_source import YamlSource

_EXPECTED_TYPE = {
    "object": "a mapping", "array": "a list", "string": "a string", "integer": "an integer",
    "number": "a number", "boolean": "true or false", "null": "null",
}


def type_name(value) -> str:
    """How a YAML value reads to a user: 'a list', 'a string', ..."""
    if value is None:
        return "null (an empty value)"
    if isinstance(value, bool):
        return "a boolean"
    for python_type, name in ((int, "an integer"), (float, "a number"), (str, "a string"),
                              (list, "a list"), (dict, "a mapping")):
        if isinstance(value, python_type):
            return name
    return type(value).__name__


def show(value) -> str:
    """A value as YAML would spell it, for messages."""
    if isinstance(value, str):
        return repr(value)
    return json.dumps(value)


def did_you_mean(word, choices) -> str:
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


@lru_cache(maxsize=None)
def load_schema(name: str, backend_tests: tuple = ()) -> dict:
    """A schema file shipped in this package (e.g. 'schema.json'), its `quantization` entries filled
    from the option table (qnn_build/options.py QUANTIZATION): the one declaration of those keys.
    backend_tests: ((backend, (setting, ...)), ...), the test settings each backend declares
    (Configs.backend_tests): schema.json's test then takes `<backend>_<setting>` for each."""
    schema = json.loads(resources.files(__package__).joinpath(name).read_text(encoding="utf-8"))
    keys = {o.spec_key: o.schema() for o in QUANTIZATION}
    if name == "schema.json":
        schema["properties"]["quantization"]["properties"] = keys
        kinds = schema["$defs"]["backendTest"]["properties"]
        schema["properties"]["test"]["properties"].update(
            {f"{backend}_{setting}": {**kinds[setting],
                                      "description": kinds[setting]["description"].replace("{backend}", backend)}
             for backend, settings in backend_tests for setting in settings})
    elif name == "configs.schema.json":  # a zoo-wide `overrides` would pin one model's tensors in every model
        schema["$defs"]["precisions"]["properties"]["quantization"]["properties"] = {
            k: v for k, v in keys.items() if k != "overrides"}
    return schema


@lru_cache(maxsize=None)
def _validator(name: str, backend_tests: tuple = ()) -> Draft202012Validator:
    """'schema.json' checks against the whole file; 'configs.schema.json#zoo' against one of its $defs."""
    file, _, definition = name.partition("#")
    schema = load_schema(file, backend_tests)
    if definition:
        schema = {**schema, "$ref": f"#/$defs/{definition}"}
    return Draft202012Validator(schema)


def check_schema(source: YamlSource, schema_name: str, data=None, base_path=(), backend_tests: tuple = ()) -> None:
    """Raise the SpecError of the failure nearest the top of the file, if `data` breaks the schema.

    `data` defaults to the whole file; `base_path` is where it sits in the file (for line numbers);
    backend_tests: the backends' own test settings (load_schema).
    """
    _raise_first(source, _validator(schema_name, backend_tests), source.data if data is None else data, base_path)


def check_against(source: YamlSource, schema: dict) -> None:
    """check_schema against a schema given as data (a backend's placement_schema for its places' files)."""
    _raise_first(source, Draft202012Validator(schema), source.data, ())


def schema_problem(schema: dict) -> str | None:
    """Why `schema` is not a JSON Schema (draft 2020-12); None when it is one."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as e:
        return e.message
    return None


def _raise_first(source: YamlSource, validator: Draft202012Validator, data, base_path) -> None:
    problems = []
    for error in validator.iter_errors(data):
        problems.extend(_describe(error))
    if problems:
        path, message = min(problems, key=lambda p: source.line_of(tuple(base_path) + p[0]))
        raise source.error(tuple(base_path) + path, message)


def _describe(error) -> list[tuple[tuple, str]]:
    """(key path, message) pairs for one jsonschema error."""
    path = tuple(error.absolute_path)
    kind, want, got = error.validator, error.validator_value, error.instance
    if kind in ("anyOf", "oneOf"):
        meant = _branch_meant(error)
        if meant:
            return [p for sub in meant for p in _describe(sub)]
        expected = error.schema.get("x-expected") or " or ".join(
            _EXPECTED_TYPE.get(branch.get("type"), "another form") for branch in want)
        return [(path, f"expected {expected}, got {type_name(got)}")]
    if kind == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        unknown = [key for key in got if key not in known]
        return [(path + (key,), "unknown key" + (did_you_mean(key, known) or f"; valid keys: {', '.join(known)}"))
                for key in unknown]
    if kind == "required":
        return [(path + (key,), "missing required key") for key in want if key not in got]
    if kind == "type":
        names = [want] if isinstance(want, str) else want
        return [(path, f"expected {' or '.join(_EXPECTED_TYPE[n] for n in names)}, got {type_name(got)}")]
    if kind == "enum":
        choices = ", ".join(show(c) for c in want)
        hint = did_you_mean(got, [c for c in want if isinstance(c, str)]) if isinstance(got, str) else ""
        return [(path, f"expected one of {choices}; got {show(got)}{hint}")]
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        op = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}[kind]
        return [(path, f"must be {op} {want}, got {show(got)}")]
    if kind in ("minItems", "minProperties", "minLength"):
        return [(path, "must not be empty" if want == 1 else f"needs at least {want} entries")]
    if kind == "uniqueItems":
        seen = []
        for index, item in enumerate(got):
            if item in seen:
                return [(path + (index,), f"{show(item)} is listed twice")]
            seen.append(item)
    if kind == "pattern" and "x-expected" in error.schema:
        return [(path, f"expected {error.schema['x-expected']}, got {show(got)}")]
    return [(path, error.message)]


def _branch_meant(error):
    """The sub-errors of the anyOf branches whose type matches the value: the branches the user meant.

    A list given where 'a shape or a mapping' is expected should be judged as a shape, not be told it
    is not a mapping.
    """
    rejected_by_type = {
        sub.relative_schema_path[0]
        for sub in error.context
        if sub.validator == "type" and not sub.relative_path
    }
    return [sub for sub in error.context if sub.relative_schema_path[0] not in rejected_by_type]
