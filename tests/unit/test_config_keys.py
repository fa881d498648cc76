"""Every config key is read by the product: a setting nothing reads misleads whoever sets it.

The rule, a static scan (the AST of every module under memory_bank/, pipeline/, actors/ and
jobs/ except memory_bank/config.py itself; tests and benches do not count as readers):

- a field `name` of a settings model counts as read when one module both reads the attribute
  (`x.name`, or `getattr(x, "name")`) and refers to the model that holds it: by the model's class
  name (`ConversationConfig`), by the attribute that holds the model in its parent
  (`.conversation` for `AppConfig.conversation`, `.embed` for `RayConfig.embed`), or by an
  attribute some product class keeps the model in (`self.config = config` with `config:
  LLMConfig`, or `config: LLMConfig` in a class body: then `backend.config.place_batch` counts).
  The AST has no types, so a bare `.alpha` somewhere would prove nothing; tying it to a module
  that handles that part of the settings keeps a generic name (`alpha`, `batch_size`,
  `max_iterations`) from passing on a read of another object's attribute;
- a model handed whole to a library counts every field as read: `.model_dump(...)` called on
  the attribute that holds it (`settings.autoscaling.model_dump()` becomes Serve's
  `autoscaling_config`);
- fields that hold a model are not checked themselves: their leaves are.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from memory_bank.config import AppConfig
from memory_bank.config_reference import nested_model

REPO = Path(__file__).resolve().parents[2]
PRODUCT = ("memory_bank", "pipeline", "actors", "jobs")
CONFIG_MODULE = REPO / "memory_bank" / "config.py"


@dataclass(frozen=True)
class Key:
    path: str  # dotted, e.g. "taxonomy.coarse_threshold"
    name: str  # the field
    model: str  # the class holding the field
    holder: str | None  # the attribute holding that model in its parent (None: AppConfig)


def config_keys(
    model: type[BaseModel] = AppConfig, prefix: str = "", holder: str | None = None
) -> Iterator[Key]:
    for name, info in model.model_fields.items():
        inner = nested_model(info.annotation)
        if inner is None:
            yield Key(prefix + name, name, model.__name__, holder)
        else:
            yield from config_keys(inner, f"{prefix}{name}.", name)


MODELS = frozenset(key.model for key in config_keys())


@dataclass
class ModuleUse:
    """What one module reads: attribute names, names it refers to, models it dumps whole, and
    the attributes it keeps a settings model in (model name -> attribute names)."""

    attributes: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)
    dumped: set[str] = field(default_factory=set)
    keeps: dict[str, set[str]] = field(default_factory=dict)


def mentioned_models(node: ast.AST | None) -> set[str]:
    """The settings models an annotation or expression names (`LLMConfig | None`, `X or
    ConversationConfig()`)."""
    if node is None:
        return set()
    found = set()
    for inner in ast.walk(node):
        name = inner.id if isinstance(inner, ast.Name) else getattr(inner, "attr", None)
        if name in MODELS:
            found.add(name)
    return found


def _kept_models(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
) -> Iterator[tuple[str, set[str]]]:
    """(attribute, models) for `self.attribute = value` in a method, where the value is a
    parameter annotated with a model, a model built there, or either `or` the other."""
    parameters = {
        arg.arg: mentioned_models(arg.annotation)
        for arg in (*function.args.args, *function.args.kwonlyargs)
    }

    def models_of(value: ast.expr | None) -> set[str]:
        if isinstance(value, ast.Name):
            return parameters.get(value.id, set())
        if isinstance(value, ast.Call):
            return mentioned_models(value.func)
        if isinstance(value, ast.BoolOp):
            return set().union(*(models_of(operand) for operand in value.values))
        return set()

    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            targets, models = node.targets, models_of(node.value)
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
            models = mentioned_models(node.annotation) | models_of(node.value)
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Attribute) and models:
                yield target.attr, models


def module_use(source: str) -> ModuleUse:
    use = ModuleUse()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            use.attributes.add(node.attr)
            if node.attr == "model_dump" and isinstance(node.value, ast.Attribute):
                use.dumped.add(node.value.attr)
        elif isinstance(node, ast.Name):
            use.names.add(node.id)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            use.attributes.add(node.args[1].value)
        elif isinstance(node, ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                    for model in mentioned_models(statement.annotation):
                        use.keeps.setdefault(model, set()).add(statement.target.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for attribute, models in _kept_models(node):
                for model in models:
                    use.keeps.setdefault(model, set()).add(attribute)
    return use


def product_modules() -> dict[str, ModuleUse]:
    return {
        path.relative_to(REPO).as_posix(): module_use(path.read_text(encoding="utf-8"))
        for package in PRODUCT
        for path in sorted((REPO / package).rglob("*.py"))
        if path != CONFIG_MODULE
    }


def is_read(key: Key, use: ModuleUse, holders: set[str]) -> bool:
    """`holders`: every attribute known to hold `key.model` (see the module docstring)."""
    if key.holder is not None and key.holder in use.dumped:
        return True
    refers_to_model = key.model in use.names or bool(holders & use.attributes)
    return key.name in use.attributes and refers_to_model


def unread_keys(modules: dict[str, ModuleUse]) -> list[str]:
    kept: dict[str, set[str]] = {}
    for use in modules.values():
        for model, attributes in use.keeps.items():
            kept.setdefault(model, set()).update(attributes)
    unread = []
    for key in config_keys():
        holders = kept.get(key.model, set()) | ({key.holder} if key.holder else set())
        if not any(is_read(key, use, holders) for use in modules.values()):
            unread.append(key.path)
    return unread


def test_every_config_key_is_read_by_the_product():
    unread = unread_keys(product_modules())
    assert not unread, (
        f"settings nothing reads: {unread}. Wire each to the code it should steer, or remove "
        "it from memory_bank/config.py and configs/*.yaml (see this module's docstring)."
    )


def test_the_scan_tells_a_read_key_from_an_unread_one():
    """The rule itself: an attribute of the same name read where the model is not handled does
    not count; a read where it is, or through an attribute a class keeps it in, does; a model
    dumped whole counts as read."""
    elsewhere = module_use("def f(engine):\n    return engine.coarse_threshold\n")
    handled = module_use("def f(config):\n    return config.taxonomy.coarse_threshold\n")
    keeper = module_use(
        "class Planner:\n"
        "    def __init__(self, settings: TaxonomyConfig | None = None):\n"
        "        self.settings = settings or TaxonomyConfig()\n"
    )
    through_keeper = module_use("def f(planner):\n    return planner.settings.coarse_threshold\n")
    dumped = module_use("def f(settings):\n    return settings.autoscaling.model_dump()\n")

    assert "taxonomy.coarse_threshold" in unread_keys({"a.py": elsewhere})
    assert "taxonomy.coarse_threshold" not in unread_keys({"a.py": handled})
    assert "taxonomy.coarse_threshold" in unread_keys({"b.py": through_keeper})
    assert "taxonomy.coarse_threshold" not in unread_keys({"a.py": keeper, "b.py": through_keeper})
    assert "serve.autoscaling.max_replicas" in unread_keys({"a.py": handled})
    assert "serve.autoscaling.max_replicas" not in unread_keys({"a.py": dumped})
