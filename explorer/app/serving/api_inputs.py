"""What an event's inputs accept, checked before Gradio reads them, so that a value the HTTP API does not take is
refused in words: the parameter, the value it got, and what it takes.

Gradio hands each input's value to its component's `preprocess` before the handler runs. A value that method cannot
read (a word or a list for a number, NaN or infinity for a whole number, None for a slider or a checkbox group) ends
in an error without words (`"error": null`: only a `gr.Error`'s message reaches a client when the app does not show
every error, which would show the server's internals); the refusals it does word (not one of the choices, above
the maximum) do not name the parameter. And some values it passes on unread: a word for a checkbox (`bool("no")`
is True), a list for a text box (read as its repr). So each value is checked here first, by its component's kind,
against what `view_api` documents for it:

    Number      a finite number, not a boolean, within the field's minimum and maximum; a whole-number field
                (precision 0) takes at most 2**53 - 1 in size (what a browser's number field holds exactly);
                None (empty) leaves the handler's default
    Slider      a finite number within its range
    Checkbox    true or false (or None: off)
    Textbox     text (or None: empty)
    Radio, Dropdown, CheckboxGroup   one of the choices (a list of them for a group or a multiselect dropdown, with
                no more entries than choices); a dropdown that takes a value of its own (`allow_custom_value`: the
                attention kind, a Hub id, an SAE folder) any text. A dropdown whose choices are whole numbers
                (layer, head, sentence) takes one as a number or as its text ("1"), and any whole number where it
                takes a value of its own: gradio_client's view_api prints every choice as text (`Literal['0',
                '1']`), the schema says integer (`api_info_as_input`); the handler gets the number.

Every number field also refuses a subnormal number (nonzero, below 2.2e-308 in size): no parameter means one. The
refusals of one call come together, a line each, in one gr.Error (its message is rendered as HTML on the page, so
it is escaped). `install()` puts the check in front of Gradio's preprocessing (`Blocks.preprocess_data`) and the
integer schema on whole-number dropdowns, process-wide and idempotent, like gradio_fixes; components of other kinds
(states, files, plots) are left to Gradio. The page sends values of these types, so it sees no difference.
"""

from __future__ import annotations

import html
import math
import re
import reprlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr
from gradio.blocks import Blocks

LARGEST_WHOLE = 2**53 - 1  # JavaScript's Number.MAX_SAFE_INTEGER: a page's number field holds no larger
SMALLEST_NORMAL = sys.float_info.min  # 2.2e-308; a nonzero number below it is subnormal
WHOLE_TEXT = re.compile(r"[+-]?[0-9]{1,20}")  # a whole number as text ("1"), ASCII digits only (int() reads "١" too)
_SHORT = reprlib.Repr()  # a refused value, quoted short (Python 3.11's Repr takes no arguments)
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxtuple, _SHORT.maxdict, _SHORT.maxstring, _SHORT.maxother = 1, 6, 6, 4, 40, 40


def shown(value: Any) -> str:
    """A refused value, short, with its kind: 'abc' (text), [1, 2] (a list), NaN, a whole number of 5,000 digits."""
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, int) and abs(value) > 10**30:  # repr of a huge int is slow, or refused past 4,300 digits
        return f"a whole number of about {int(value.bit_length() * math.log10(2)) + 1:,} digits"
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("-" if value < 0 else "") + "infinity"
    text = _SHORT.repr(value)  # never the whole of a 10 MB text or a million-entry list
    kind = {str: "text", list: "a list", tuple: "a list", dict: "an object"}.get(type(value))
    return f"{text} ({kind})" if kind else text


def refused(name: str, value: Any, why: str, takes: str) -> gr.Error:
    """The error a client reads: `{name}: got {value}{why}; it takes {takes}`. A gr.Error: Gradio sends its message
    whether or not the app shows every error, and the page renders it as HTML, so <, > and & are escaped (the value
    is the sender's, perhaps from a link someone else made)."""
    message = f"{name}: got {shown(value)}{why}; it takes {takes}"
    return gr.Error(html.escape(message, quote=False), print_exception=False)


def _range(minimum: Any, maximum: Any) -> str:
    if minimum is not None and maximum is not None:
        return f" from {minimum:g} to {maximum:g}"
    if minimum is not None:
        return f" of at least {minimum:g}"
    return f" of at most {maximum:g}" if maximum is not None else ""


def number(name: str, value: Any, *, whole: bool, minimum: Any = None, maximum: Any = None,
           empty: bool = True) -> Any:
    """A number field's value, checked; refused (gr.Error) in words."""
    takes = ("a whole number" if whole else "a number") + _range(minimum, maximum) + (" (or null: empty)" if empty
                                                                                    else "")
    if value is None and empty:
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise refused(name, value, "", takes)
    try:
        size = abs(float(value))
    except OverflowError:  # an int beyond float's range
        size = math.inf
    if math.isnan(size):
        raise refused(name, value, "", takes)
    if size == math.inf:
        raise refused(name, value, "" if isinstance(value, float) else ", beyond a float's range", takes)
    if whole and size > LARGEST_WHOLE:
        raise refused(name, value, f", more than {LARGEST_WHOLE:,} in size", takes)
    if 0 < size < SMALLEST_NORMAL:
        raise refused(name, value, ", too small to compute with (a nonzero number below 2.2e-308)", takes)
    if minimum is not None and value < minimum:
        raise refused(name, value, f", less than minimum value {minimum:g}", takes)
    if maximum is not None and value > maximum:
        raise refused(name, value, f", greater than maximum value {maximum:g}", takes)
    return value


def _whole_choice(value: Any) -> Any:
    """A whole-number dropdown's value as its number: 1, 1.0 and "1" -> 1; anything else unchanged."""
    if isinstance(value, str) and WHOLE_TEXT.fullmatch(value.strip()):
        return int(value.strip())
    elif isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _listed(values: Sequence[Any]) -> str:
    text = ", ".join(repr(v) for v in values[:12]) + (", …" if len(values) > 12 else "")
    return text or "none (the model has none)"


def choice(name: str, value: Any, choices: Sequence[Any], *, custom: bool) -> Any:
    """One value of a Radio or Dropdown, checked against its choices (a whole-number choice also from its text)."""
    if choices and all(isinstance(c, int) and not isinstance(c, bool) for c in choices):
        takes = f"one of {_listed(choices)}" + (" or another whole number" if custom else "") + \
            ", as a number or its text ('1')"
        if value is None or (custom and value == ""):
            return value  # empty: the handler's default
        read = _whole_choice(value)
        if isinstance(read, int) and not isinstance(read, bool):
            if abs(read) > LARGEST_WHOLE:
                raise refused(name, value, f", more than {LARGEST_WHOLE:,} in size", takes)
            if custom or read in choices:
                return read
        raise refused(name, value, "", takes)
    if value is None or value in choices or (custom and isinstance(value, str)):
        return value
    raise refused(name, value, "", f"one of {_listed(choices)}" + (" or any text" if custom else ""))


def choices_of(block: Any) -> list[Any]:
    return [value for _, value in getattr(block, "choices", None) or []]


def many(name: str, value: Any, choices: Sequence[Any], *, custom: bool) -> list[Any]:
    """A CheckboxGroup's or multiselect Dropdown's value: a list of choices, no longer than the choices."""
    takes = f"a list of {_listed(choices)}" if choices else "an empty list (no choices)"
    if not isinstance(value, list):
        raise refused(name, value, "", takes)
    if len(value) > max(len(choices), 1) and not custom:
        raise refused(name, value, f", {len(value):,} entries for {len(choices)} choices", takes)
    out = []
    for item in value:
        try:
            out.append(choice(name, item, choices, custom=custom))
        except gr.Error:
            raise refused(name, value, f", whose {shown(item)} is not a choice", takes) from None
    return out


def accepted(block: Any, value: Any, name: str) -> Any:
    """`value` as `block`'s preprocessing may read it (a whole-number choice given as text becomes its number), or
    gr.Error naming `name`, the value and what the component takes. Other kinds of components: unchanged."""
    if isinstance(block, gr.Slider):
        return number(name, value, whole=False, minimum=block.minimum, maximum=block.maximum, empty=False)
    if isinstance(block, gr.Number):
        return number(name, value, whole=block.precision == 0, minimum=block.minimum, maximum=block.maximum)
    if isinstance(block, gr.Checkbox):
        if value is None or isinstance(value, bool):
            return value
        raise refused(name, value, "", "true or false")
    if isinstance(block, gr.Textbox):
        if value is None or isinstance(value, str):
            return value
        raise refused(name, value, "", "text")
    if isinstance(block, gr.CheckboxGroup):
        return many(name, value, choices_of(block), custom=False)
    if isinstance(block, gr.Dropdown):
        custom = bool(block.allow_custom_value)
        if block.multiselect:
            return None if value is None else many(name, value, choices_of(block), custom=custom)
        return choice(name, value, choices_of(block), custom=custom)
    if isinstance(block, gr.Radio):
        return choice(name, value, choices_of(block), custom=False)
    return value


def quiet_refusals(fn: Callable) -> Callable:
    """Mark a page's best-effort event (the address bar's link): inputs it refuses end it without a notice. Its page
    can send values a model change has just made stale (the old model's head switches, as a lesson link opens on
    another model); the event that follows the change's Run sends the right ones."""
    fn.quiet_refusals = True  # type: ignore[attr-defined]
    return fn


def parameter_name(block_fn: Any, index: int, block: Any) -> str:
    """The HTTP API's name of an event's input (what view_api lists), else the component's label."""
    names = getattr(block_fn, "input_parameter_names", None) or ()
    if index < len(names) and names[index]:
        return str(names[index])
    return str(getattr(block, "label", None) or f"input {index}")


def _integer_schema(original: Callable[[Any], dict]) -> Callable[[Any], dict]:
    def api_info_as_input(self: gr.Dropdown) -> dict:
        info = original(self)
        values = choices_of(self)
        if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            target = info["items"] if self.multiselect else info
            target["type"] = "integer"  # the choices are numbers (the schema said "string")
        return info
    api_info_as_input._checked_inputs = True  # type: ignore[attr-defined]
    return api_info_as_input


def _checked(original: Callable) -> Callable:
    async def preprocess_data(self: Blocks, block_fn: Any, inputs: list[Any], state: Any, *args: Any,
                              **kwargs: Any) -> Any:
        inputs, refusals = list(inputs), []
        props = getattr(block_fn, "component_prop_inputs", ()) or ()
        for i, block in enumerate(block_fn.inputs[:len(inputs)]):
            if i in props or getattr(block, "stateful", False):
                continue
            if state is not None and block._id in state:
                block = state[block._id]  # this session's copy: its choices are the session's model's
            try:
                inputs[i] = accepted(block, inputs[i], parameter_name(block_fn, i, block))
            except gr.Error as err:
                refusals.append(err.message)
        if refusals:  # every one at once, a line each: a client fixes them in one go
            quiet = getattr(block_fn.fn, "quiet_refusals", False)
            raise gr.Error("\n".join(refusals), print_exception=False, visible=not quiet)
        return await original(self, block_fn, inputs, state, *args, **kwargs)
    preprocess_data._checked_inputs = True  # type: ignore[attr-defined]
    return preprocess_data


def install() -> None:
    """Check every event's inputs before Gradio preprocesses them, and give whole-number dropdowns an integer schema
    (idempotent)."""
    if not getattr(Blocks.preprocess_data, "_checked_inputs", False):
        Blocks.preprocess_data = _checked(Blocks.preprocess_data)  # type: ignore[method-assign]
    if not getattr(gr.Dropdown.api_info_as_input, "_checked_inputs", False):
        gr.Dropdown.api_info_as_input = _integer_schema(gr.Dropdown.api_info_as_input)  # type: ignore[method-assign]
