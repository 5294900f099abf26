"""The page's HTTP API as its clients see it, read from the built page: every named endpoint (an event wired with an
`api_name` and public: not `api_visibility="private"` or `"undocumented"`), its parameters (name, type, default, in
order), its returns (in order) and one line on what it does (the `api_description` given where the endpoint is
wired; without one, the first sentence of its handler's docstring).

The source is Gradio's own `Blocks.get_api_info()`, which is what `gradio_client.Client.view_api(return_format="dict")`
returns, so the API tab's list, docs/http-api.md's table (scripts/docs_tables.py) and a client read the same thing:

    endpoints(demo)          # -> (Endpoint("/load_model", ...), Endpoint("/build_model", ...), ...)
    endpoints_of(client.view_api(print_info=False, return_format="dict"), client.config)   # the same, from a client
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...i18n.messages import message_in

REQUIRED = object()  # the default of a parameter a client must give


@dataclass(frozen=True)
class Parameter:
    name: str
    type: str  # the Python type a client sends, as gradio_client names it: "str", "bool", "Literal['a', 'b']", ...
    default: Any = REQUIRED  # the page's value (the starting model's, for its head lists and choices)


@dataclass(frozen=True)
class Return:
    label: str  # the component's label; without one its elem_id ("status"), else its kind ("Markdown")
    component: str  # "Markdown", "Plot", "Dataframe", ...


@dataclass(frozen=True)
class Endpoint:
    name: str  # "/analyze"
    description: str  # one line
    parameters: tuple[Parameter, ...]
    returns: tuple[Return, ...]


def endpoints(demo: Any) -> tuple[Endpoint, ...]:
    """The named endpoints of a built gr.Blocks, in the order they were wired. Refreshes the Blocks' config first
    (as its launch does), so events wired since it was made are read with their components."""
    demo.config = demo.get_config_file()
    return endpoints_of(demo.get_api_info(), demo.config)


def endpoints_of(api_info: dict, config: dict) -> tuple[Endpoint, ...]:
    """The endpoints of Gradio's API description (`Blocks.get_api_info()` or a client's `view_api` dict); `config`:
    the page's (`Blocks.config`, a client's `config`), for the elem_ids of unlabelled returns."""
    elem_ids = {c["id"]: c["props"].get("elem_id") for c in config["components"]}
    return tuple(Endpoint(name, first_sentence(info.get("description") or ""),
                          tuple(Parameter(p["parameter_name"], p["python_type"]["type"],
                                          p["parameter_default"] if p["parameter_has_default"] else REQUIRED)
                                for p in info["parameters"]),
                          tuple(Return(own_label(r["label"], r["component"], elem_ids), r["component"])
                                for r in info["returns"]))
                 for name, info in api_info["named_endpoints"].items())


def first_sentence(text: str) -> str:
    """The description's first sentence (Gradio joins a docstring's lines): a one-line description is all of it."""
    found = re.match(r"(.+?[.!?])(?:\s|$)", text.strip())
    return (found.group(1) if found else text.strip()).replace("\n", " ")


def own_label(label: str, component: str, elem_ids: dict[int, str | None]) -> str:
    """A component's label; without one (Gradio then names it after its id, "value_52", which changes whenever a
    component is added before it) its elem_id, else its kind."""
    unlabelled = re.fullmatch(r"(?:value|parameter)_(\d+)", label)
    return (elem_ids.get(int(unlabelled.group(1))) or component) if unlabelled else label


# ------------------------------------------------------------------ in words

def signature(e: Endpoint) -> str:
    """`/lens(sentence1)`: the name and the parameters' names, in order."""
    return f"`{e.name}({', '.join(p.name for p in e.parameters)})`"


def endpoint_list(found: tuple[Endpoint, ...], lang: str = "en") -> str:
    """The API tab's list: each endpoint's name and parameters, in order, and what it does (in `lang` where
    model.toml's [endpoint] has its description)."""
    return "\n".join(f"- {signature(e)}: {message_in(e.description, lang)}" for e in found)


def short_type(python_type: str) -> str:
    """A parameter's type with its choices left out (`Literal['a', 'b']` -> `choice`): the choices of a model's
    heads, layers or devices depend on the model and the machine, which the docs' table must not."""
    return re.sub(r"Literal\[(?:'[^']*'|\"[^\"]*\"|[^\]'\"])*\]", "choice", python_type)


def shown_default(value: Any) -> str:
    """A default as Python writes it, a list of more than three values shortened to its ends and its length."""
    if isinstance(value, list) and len(value) > 3:
        return f"[{value[0]!r}, …, {value[-1]!r}] ({len(value)})"
    return repr(value)


MOST_RETURNS = 20  # a longer list of returns (/load_model's: every component a model change updates) is cut here


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def endpoints_table(found: tuple[Endpoint, ...]) -> str:
    """docs/http-api.md's table of every endpoint (scripts/docs_tables.py writes it there; tests check it)."""
    rows = ["| endpoint | parameters, in order (type = default) | returns, in order | what it does |",
            "|---|---|---|---|"]
    for e in found:
        params = ", ".join(f"`{p.name}`: {short_type(p.type)}"
                           + ("" if p.default is REQUIRED else f" = {shown_default(p.default)}") for p in e.parameters)
        outs = [r.label if r.label == r.component else f"{r.label} ({r.component})" for r in e.returns]
        if len(outs) > MOST_RETURNS:
            outs = [*outs[:MOST_RETURNS], f"… {len(outs)} in all"]
        rows.append(f"| `{e.name}` | {cell(params) or 'none'} | {cell(', '.join(outs))} | {cell(e.description)} |")
    return "\n".join(rows) + "\n"
