"""A small declarative XML binding: one class declaration both writes and reads an element.

Each element class is a slotted dataclass whose fields are declared with :func:`attr`, :func:`text`,
:func:`child`, :func:`children` or :func:`text_child`. The decorator :func:`element` compiles, once
per class, a writer (generated Python source, so writing does no per-call introspection) and a
reader table for lxml. Output follows Go's ``xml.MarshalIndent(v, "", "\\t")``: tab indentation,
attributes before children, ``<x></x>`` for empty elements, fields in declaration order. ``None``
means "absent": such attributes and children are not written and stay ``None`` when not read.

The same declarations give the element's JSON as Go's ``encoding/json`` writes KubeVirt's Go structs
(:meth:`XMLElement.to_json_dict`): those structs carry no json tags, so keys are the Go field names and
nothing is omitted; an absent value is ``null`` where Go holds a pointer, slice or map, and the Go
zero value (``""``, ``0``, ``false``, an all-zero object) otherwise.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar, dataclass_transform

from lxml import etree

QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"
KUBEVIRT_NS = "http://kubevirt.io"
_PREFIXES = {"qemu": QEMU_NS}

# Characters XML 1.0 cannot carry (C0 controls other than tab/newline/return, surrogates, U+FFFE/F):
# Go's encoding/xml writes U+FFFD in their place, which keeps the document well-formed.
_NOT_XML_CHARS = r"\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff"
_REPLACED = {
    chr(code): "\ufffd"
    for first, last in ((0x00, 0x08), (0x0B, 0x0C), (0x0E, 0x1F), (0xD800, 0xDFFF), (0xFFFE, 0xFFFF))
    for code in range(first, last + 1)
}
_ATTR_ESCAPES = str.maketrans(
    {
        **_REPLACED,
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&#34;",
        "'": "&#39;",
        "\t": "&#x9;",
        "\n": "&#xA;",
        "\r": "&#xD;",
    }
)
_TEXT_ESCAPES = str.maketrans(
    {
        **_REPLACED,
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&#34;",
        "'": "&#39;",
        "\t": "&#x9;",
        "\r": "&#xD;",
    }
)
_needs_attr_escape = re.compile(f"[&<>\"'\t\n\r{_NOT_XML_CHARS}]").search
_needs_text_escape = re.compile(f"[&<>\"'\t\r{_NOT_XML_CHARS}]").search


class XMLModelError(ValueError):
    """Raised when XML cannot be read into the model (wrong root, a malformed number)."""


# Converted values repeat across conversions (paths, models, names): remember their escaped form.
_CACHE_LIMIT = 16384
_attr_cache: dict[str, str] = {}
_text_cache: dict[str, str] = {}


def _escaped(value: str, cache: dict[str, str], table: dict[int, str], needs: Callable[[str], object]) -> str:
    escaped = cache.get(value)
    if escaped is None:
        escaped = value.translate(table) if needs(value) else value
        if len(cache) >= _CACHE_LIMIT:
            cache.clear()
        cache[value] = escaped
    return escaped


def escape_attr(value: str) -> str:
    """Escape an attribute value the way Go's encoding/xml does."""
    return _escaped(value, _attr_cache, _ATTR_ESCAPES, _needs_attr_escape)


def escape_text(value: str) -> str:
    """Escape character data the way Go's encoding/xml does (newlines stay literal)."""
    return _escaped(value, _text_cache, _TEXT_ESCAPES, _needs_text_escape)


# Field kinds, kept in the dataclass field metadata under this key.
_SPEC = "kubevirt.xml"


@dataclasses.dataclass(frozen=True, slots=True)
class _GoField:
    """How a field appears in the Go struct KubeVirt marshals to JSON."""

    name: str | None = None  # the Go field name; by default the Python name in CamelCase
    pointer: bool = False  # a Go pointer: absent is ``null`` instead of the zero value
    time: bool = False  # a ``*metav1.Time``: RFC 3339 in UTC, to the second
    unread: bool = False  # Go's XML decoder never fills it (a prefixed tag name): always absent


@dataclasses.dataclass(frozen=True, slots=True)
class _FieldSpec:
    kind: str  # "attr" | "text" | "child" | "children" | "text_child"
    xml_name: str | None
    value_type: type = str
    cls: Any = None
    wrapper: str | None = None
    go: _GoField = _GoField()


def attr(
    xml_name: str | None = None,
    *,
    as_type: type = str,
    default: Any = None,
    go: str | None = None,
    go_pointer: bool = False,
) -> Any:
    """An XML attribute; ``None`` is not written. ``as_type`` is ``str`` or ``int``. ``go`` names the Go
    field when it is not the CamelCase of the Python name; ``go_pointer`` marks a Go pointer."""
    spec = _FieldSpec("attr", xml_name, as_type, go=_GoField(go, go_pointer))
    return dataclasses.field(default=default, metadata={_SPEC: spec})


def text(*, as_type: type = str, default: Any = None, go: str | None = None) -> Any:
    """The element's character data."""
    spec = _FieldSpec("text", None, as_type, go=_GoField(go))
    return dataclasses.field(default=default, metadata={_SPEC: spec})


def text_child(
    xml_name: str | None = None,
    *,
    as_type: type = str,
    default: Any = None,
    go: str | None = None,
    go_pointer: bool = False,
    go_time: bool = False,
) -> Any:
    """A child element that holds only text (``<name>x</name>``); ``None`` is not written."""
    go_field = _GoField(go, go_pointer or go_time, go_time)
    spec = _FieldSpec("text_child", xml_name, as_type, go=go_field)
    return dataclasses.field(default=default, metadata={_SPEC: spec})


def child(
    cls: Any,
    xml_name: str | None = None,
    *,
    required: bool = False,
    go: str | None = None,
    go_pointer: bool | None = None,
    go_unread: bool = False,
) -> Any:
    """One child element; optional ones default to ``None``, required ones to an empty instance. In Go
    an optional child is a pointer unless ``go_pointer=False`` (absent then reads as the zero struct)."""
    pointer = not required if go_pointer is None else go_pointer
    spec = _FieldSpec("child", xml_name, cls=cls, go=_GoField(go, pointer, unread=go_unread))
    if required:
        return dataclasses.field(default_factory=cls, metadata={_SPEC: spec})
    return dataclasses.field(default=None, metadata={_SPEC: spec})


def children(
    cls: Any, xml_name: str | None = None, *, wrapper: str | None = None, go: str | None = None
) -> Any:
    """Repeated child elements, optionally inside a ``wrapper`` element written only when non-empty.
    In Go a slice: ``null`` when there are none (as Go's XML decoder leaves it)."""
    spec = _FieldSpec("children", xml_name, cls=cls, wrapper=wrapper, go=_GoField(go, True))
    return dataclasses.field(default_factory=list, metadata={_SPEC: spec})


class XMLElement:
    """Base of every element class (gives the type checker the compiled members)."""

    __slots__ = ()
    TAG: ClassVar[str]
    NAMESPACE: ClassVar[str | None]
    _read: ClassVar[Callable[[Any], Any]]

    def _write(self, out: list[str], indent: str, tag: str = "") -> None:
        """Write at any indentation under any tag (only recursive models need it): compiled for the
        class on first use, which then replaces this method."""
        cls = type(self)
        writer = _compile_writer(cls, root=False)
        cls._write = writer  # type: ignore[method-assign]
        writer(self, out, indent, tag or cls.TAG)

    def _write_root(self, out: list[str]) -> None:
        """Write as a document root, with every indentation a constant: compiled on first use."""
        cls = type(self)
        writer = _compile_writer(cls, root=True)
        cls._write_root = writer  # type: ignore[method-assign]
        writer(self, out)

    def _copy(self: _E) -> _E:
        """A deep copy (scalars are immutable and shared): compiled for the class on first use."""
        cls = type(self)
        copier = _compile_copier(cls)
        cls._copy = copier  # type: ignore[method-assign]
        result: _E = copier(self)
        return result

    def _go_json(self) -> dict[str, Any]:
        raise NotImplementedError  # replaced by the compiled JSON writer of each @element class

    def to_json_dict(self) -> dict[str, Any]:
        """The element as Go's ``json.Marshal`` writes the KubeVirt struct read from the same XML."""
        return self._go_json()

    def to_xml(self) -> str:
        """Serialise like Go's ``xml.MarshalIndent(v, "", "\\t")`` (no declaration, no newline)."""
        out: list[str] = []
        self._write_root(out)
        return "".join(out)[1:]

    @classmethod
    def from_element(cls: type[_E], el: Any) -> _E:
        """Read an lxml element into this class; unknown attributes and children are ignored."""
        result: _E = cls._read(el)
        return result

    @classmethod
    def from_xml(cls: type[_E], xml: str | bytes) -> _E:
        """Parse a document whose root is this element.

        The same document is often read again and again (virt-launcher reads the domain on every
        libvirt event and every GetDomain): once a document has been seen twice, its model is kept and
        later reads of it return a copy of that model, which is cheaper than parsing."""
        if type(xml) is not str and type(xml) is not bytes:
            return cls._parse(xml)  # e.g. a bytearray, which cannot be a key
        key = (cls, xml)
        kept = _read_cache.get(key, _MISSING)
        if kept is not _MISSING and kept is not None:
            result: _E = kept._copy()
            return result
        result = cls._parse(xml)
        if len(_read_cache) >= _READ_CACHE_LIMIT:
            _read_cache.clear()
        if kept is _MISSING:
            _read_cache[key] = None  # seen once: a one-off document costs no copy
            return result
        _read_cache[key] = result
        return result._copy()

    @classmethod
    def _parse(cls: type[_E], xml: str | bytes) -> _E:
        try:
            root = etree.fromstring(xml.encode() if isinstance(xml, str) else xml, _parser())
        except etree.XMLSyntaxError as err:
            raise XMLModelError(f"malformed XML: {err}") from err
        expected = _qualified(cls.TAG, cls.NAMESPACE)
        if root.tag != expected:
            raise XMLModelError(f"expected root element <{cls.TAG}>, got <{root.tag}>")
        return cls.from_element(root)


_E = TypeVar("_E", bound=XMLElement)
_parsers = threading.local()
# (class, document) -> the model read from it, or None when the document was seen once; the models
# kept here are never handed out, only copies of them
_READ_CACHE_LIMIT = 8
_read_cache: dict[tuple[type[Any], str | bytes], Any] = {}


def _parser() -> Any:
    """An lxml parser for the calling thread (lxml parser objects must not be shared across threads)."""
    parser = getattr(_parsers, "parser", None)
    if parser is None:
        parser = _parsers.parser = etree.XMLParser(
            remove_blank_text=True, resolve_entities=False, no_network=True, collect_ids=False
        )
    return parser


def _qualified(tag: str, namespace: str | None) -> str:
    prefix, sep, local = tag.partition(":")
    if sep:
        return f"{{{_PREFIXES[prefix]}}}{local}"
    return f"{{{namespace}}}{tag}" if namespace else tag


@dataclass_transform(kw_only_default=True)
def element(
    tag: str,
    *,
    namespace: str | None = None,
    declare: str = "",
    go_xml_name: bool = False,
    go_extra: dict[str, Any] | None = None,
) -> Callable[[type[Any]], type[Any]]:
    """Turn a class into a slotted, keyword-only dataclass bound to the XML element ``tag``.

    ``namespace`` is the namespace the element and its descendants live in when read; ``declare`` is
    extra text written into the start tag (namespace declarations such as ``xmlns="..."``).
    ``go_xml_name`` says the Go struct has an ``XMLName`` field (filled with the tag when read);
    ``go_extra`` lists Go fields not modelled here with the value they hold (their zero value).
    """

    def wrap(cls: type[Any]) -> type[Any]:
        custom_json = "_go_json" in cls.__dict__
        # init=False: the __init__ is ours (below); the dataclass one would be compiled for nothing.
        dc = dataclasses.dataclass(slots=True, kw_only=True, init=False)(cls)
        dc.TAG = tag
        dc.NAMESPACE = namespace
        dc._DECLARE = declare
        specs = [(f.name, f.metadata[_SPEC]) for f in dataclasses.fields(dc) if _SPEC in f.metadata]
        dc.__init__ = _compile_init(dc)
        dc._SPECS = specs  # writers are compiled on first use (most classes are only ever inlined)
        dc._read = staticmethod(_compile_reader(dc, namespace, specs))
        if not custom_json:
            xml_name = tag.partition(":")[2] or tag if go_xml_name else None
            dc._go_json = _compile_go_json(dc.__name__, specs, xml_name, go_extra or {})
        return dc

    return wrap


_MISSING = object()


def _compile_init(cls: type[Any]) -> Callable[..., None]:
    """An ``__init__`` equivalent to the dataclass one, cheaper per call: list defaults are literals,
    absent children are built without the dataclass default-factory indirection, and the parameters
    are not keyword-only at run time (CPython fills missing positional-or-keyword defaults from a
    tuple, keyword-only ones by a dict lookup each); the type checker still sees keyword-only ones."""
    namespace: dict[str, Any] = {"_MISSING": _MISSING}
    params: list[str] = []
    body: list[str] = []
    for field in dataclasses.fields(cls):
        name = field.name
        if field.default_factory is not dataclasses.MISSING:
            params.append(f"{name}=_MISSING")
            if field.default_factory is list:
                body.append(f"    self.{name} = [] if {name} is _MISSING else {name}")
            else:
                namespace[f"_f_{name}"] = field.default_factory
                body.append(f"    self.{name} = _f_{name}() if {name} is _MISSING else {name}")
        else:
            namespace[f"_d_{name}"] = field.default
            params.append(f"{name}=_d_{name}")
            body.append(f"    self.{name} = {name}")
    signature = ", ".join(["self", *params])
    source = f"def __init__({signature}):\n" + "\n".join(body or ["    pass"])
    # Produces the class's ``__init__``: one assignment per field with literal defaults. Faster than
    # the dataclass one because it skips the default-factory indirection and keyword-only lookups.
    exec(source, namespace)  # generated from the dataclass fields above
    init: Callable[..., None] = namespace["__init__"]
    init.__qualname__ = f"{cls.__name__}.__init__"
    return init


def _rendered(spec: _FieldSpec, cache: str, escaper: str, pad: str) -> tuple[list[str], str]:
    """Source computing the text of the value in ``v`` (escaped), and the expression naming it."""
    if spec.value_type is str:
        # ``or``: a cached empty string is falsy, and escaping "" again gives "" again
        return [], f"({cache}(v) or {escaper}(v))"
    if spec.value_type is bool:
        return [f"{pad}e = 'true' if v else 'false'"], "e"
    return [], "v"  # an int renders as str(v) in an f-string


def _text_value_lines(target: str, spec: _FieldSpec, pad: str) -> list[str]:
    """Source that appends the character data in ``v`` to the local string ``target``."""
    setup, expr = _rendered(spec, "text_get", "escape_text", pad)
    return [*setup, f"{pad}{target} += {expr if spec.value_type is not int else 'str(v)'}"]


def _compile_writer(cls: Any, *, root: bool) -> Any:
    """The writer of ``cls``: ``_write(self, out, ind, tag)`` (``tag`` is a parameter because one class
    may serve several element names, FeatureState), or ``_write_root(self, out)`` for a document root,
    whose indentation is known and so written as constants."""
    if root:
        lines = ["def _write_root(self, out):"]
        lines += _element_lines("self", cls.TAG, _Indent(const="\n"), cls._DECLARE, cls._SPECS, "    ", 0)
    else:
        lines = ["def _write(self, out, ind, tag):"]
        lines += _element_lines("self", None, _Indent(expr="ind"), cls._DECLARE, cls._SPECS, "    ", 0)
    namespace: dict[str, Any] = {
        "escape_attr": escape_attr,
        "escape_text": escape_text,
        "attr_get": _attr_cache.get,
        "text_get": _text_cache.get,
    }
    # Produces ``_write``/``_write_root``: straight-line string appends with the tags, attribute names
    # and (for a root) indentation as constants. Faster than walking field metadata per element or
    # building an lxml tree, since each element costs a few appends and no lookups.
    exec("\n".join(lines), namespace)  # the source is generated from the declarations above
    writer = namespace["_write_root" if root else "_write"]
    writer.__qualname__ = f"{cls.__name__}.{writer.__name__}"
    return writer


def _specs_of(cls: Any) -> list[tuple[str, _FieldSpec]]:
    return [(f.name, f.metadata[_SPEC]) for f in dataclasses.fields(cls) if _SPEC in f.metadata]


def _tag_exprs(tag: str | None, declare: str) -> tuple[str, str, str]:
    """Expressions for ``<tag``, ``>`` + ``</tag>`` and ``</tag>``: constants for a known tag, else
    built from the writer's ``tag`` parameter."""
    if tag is None:
        return "'<' + tag", f"{declare + '></'!r} + tag + '>'", "'</' + tag + '>'"
    return repr("<" + tag), repr(f"{declare}></{tag}>"), repr(f"</{tag}>")


@dataclasses.dataclass(frozen=True, slots=True)
class _Indent:
    """The indentation an element is written at: a constant where the generator knows it, else the
    name of a local variable holding it."""

    expr: str | None = None
    const: str | None = None

    def plus(self, literal_expr: str) -> str:
        """An expression for the indentation followed by ``literal_expr`` (a string literal)."""
        if self.const is not None:
            return repr(self.const + ast.literal_eval(literal_expr))
        return f"{self.expr} + {literal_expr}"

    def in_fstring(self) -> str:
        """The indentation as a piece of an f-string's source."""
        if self.const is not None:
            return self.const.replace("\n", "\\n").replace("\t", "\\t")
        return f"{{{self.expr}}}"

    def child(self, name: str, pad: str) -> tuple[_Indent, list[str]]:
        """The indentation one level deeper, and the source computing it (none for a constant)."""
        if self.const is not None:
            return _Indent(const=self.const + "\t"), []
        return _Indent(expr=name), [f"{pad}{name} = {self.expr} + '\\t'"]


def _element_lines(
    obj: str,
    tag: str | None,
    ind: _Indent,
    declare: str,
    specs: list[tuple[str, _FieldSpec]],
    pad: str,
    depth: int,
    inlined: frozenset[type] = frozenset(),
) -> list[str]:
    """Source writing the element held in ``obj`` (``tag`` None: the writer's parameter). Child
    elements are written inline, so that writing a whole domain makes no per-element calls; tags
    and known indentation are constants and values are joined by f-strings, in as few steps as the
    generated code can take."""
    open_tag, empty_close, close_tag = _tag_exprs(tag, declare)
    start = ind.plus(open_tag) if tag is not None else f"{ind.expr} + {open_tag}"
    lines = [f"{pad}s = {start}"]
    for field_name, spec in specs:
        if spec.kind == "attr":
            xml_name = spec.xml_name or field_name
            setup, expr = _rendered(spec, "attr_get", "escape_attr", pad + "    ")
            lines += [
                f"{pad}v = {obj}.{field_name}",
                f"{pad}if v is not None:",
                *setup,
                f"{pad}    s += f' {xml_name}=\"{{{expr}}}\"'",
            ]
    texts = [
        line
        for field_name, spec in specs
        if spec.kind == "text"
        for line in (
            f"{pad}v = {obj}.{field_name}",
            f"{pad}if v is not None:",
            *_text_value_lines("s", spec, pad + "    "),
        )
    ]
    cind, cind_lines = ind.child(f"i{depth}", pad)
    body = [
        line
        for field_name, spec in specs
        for line in _child_lines(obj, field_name, spec, cind, pad, depth, inlined)
    ]
    if not body and not texts:
        return [*lines, f"{pad}out.append(s + {empty_close})"]
    lines.append(f"{pad}s += {declare + '>'!r}")
    if not body:
        return [*lines, *texts, f"{pad}out.append(s + {close_tag})"]
    indented_close = ind.plus(close_tag) if tag is not None else f"{ind.expr} + {close_tag}"
    return [
        *lines,
        *texts,
        f"{pad}out.append(s)",
        *cind_lines,
        f"{pad}n{depth} = len(out)",
        *body,
        f"{pad}if len(out) != n{depth}:",
        f"{pad}    out.append({indented_close})",
        f"{pad}else:",
        f"{pad}    out.append({close_tag})",
    ]


def _write_child(
    item: str, spec: _FieldSpec, cind: _Indent, pad: str, depth: int, inlined: frozenset[type]
) -> list[str]:
    """Source writing one child object held in ``item``: inline, or by a call for a class that is
    already being inlined further up (a recursive model)."""
    cls = spec.cls
    if cls in inlined:
        ind_arg = repr(cind.const) if cind.const is not None else cind.expr
        return [f"{pad}{item}._write(out, {ind_arg}, {(spec.xml_name or cls.TAG)!r})"]
    declare = getattr(cls, "_DECLARE", "")
    tag = spec.xml_name or cls.TAG
    return _element_lines(item, tag, cind, declare, _specs_of(cls), pad, depth + 1, inlined | {cls})


def _child_lines(
    obj: str, field_name: str, spec: _FieldSpec, cind: _Indent, pad: str, depth: int, inlined: frozenset[type]
) -> list[str]:
    item = f"c{depth}"
    if spec.kind == "child":
        return [
            f"{pad}{item} = {obj}.{field_name}",
            f"{pad}if {item} is not None:",
            *_write_child(item, spec, cind, pad + "    ", depth, inlined),
        ]
    if spec.kind == "children":
        if spec.wrapper:
            gind, gind_lines = cind.child(f"g{depth}", pad + "    ")
            return [
                f"{pad}if {obj}.{field_name}:",
                f"{pad}    out.append({cind.plus(repr('<' + spec.wrapper + '>'))})",
                *gind_lines,
                f"{pad}    for {item} in {obj}.{field_name}:",
                *_write_child(item, spec, gind, pad + "        ", depth, inlined),
                f"{pad}    out.append({cind.plus(repr('</' + spec.wrapper + '>'))})",
            ]
        return [
            f"{pad}for {item} in {obj}.{field_name}:",
            *_write_child(item, spec, cind, pad + "    ", depth, inlined),
        ]
    if spec.kind == "text_child":
        xml_name = spec.xml_name or field_name
        setup, expr = _rendered(spec, "text_get", "escape_text", pad + "    ")
        return [
            f"{pad}v = {obj}.{field_name}",
            f"{pad}if v is not None:",
            *setup,
            f"{pad}    out.append(f'{cind.in_fstring()}<{xml_name}>{{{expr}}}</{xml_name}>')",
        ]
    return []


def _read_int(raw: str, where: str) -> int:
    try:
        return int(raw.strip())
    except ValueError as err:
        raise XMLModelError(f"{where}: expected an integer, got {raw!r}") from err


def _read_bool(raw: str) -> bool:
    return raw.strip() in ("true", "yes", "on", "1")


def _value_expr(raw: str, value_type: type, where: str, namespace: dict[str, Any]) -> str:
    """Source converting the string in ``raw`` to ``value_type`` (a malformed int names ``where``)."""
    if value_type is str:
        return raw
    if value_type is bool:
        return f"read_bool({raw})"
    name = f"_w{len(namespace)}"
    namespace[name] = where
    return f"read_int({raw}, {name})"


def _child_reader(cls: Any) -> Any:
    """The reader of a child class: its compiled one, or a late lookup for a class whose reader is
    not compiled yet (a model that refers to itself)."""
    read = cls.__dict__.get("_read")
    if read is not None:
        return read.__func__ if isinstance(read, staticmethod) else read
    return lambda el: cls._read(el)


def _compile_reader(cls: type[Any], namespace: str | None, specs: list[tuple[str, _FieldSpec]]) -> Any:
    """The reader of ``cls``: generated source that visits only the attributes and children present
    (one pass over each) and keeps the values in locals, so that reading makes no per-field lookups
    beyond one string comparison chain."""
    tag = cls.TAG
    env: dict[str, Any] = {"read_int": _read_int, "read_bool": _read_bool, "new": object.__new__, "cls": cls}
    local = {field_name: f"f{index}" for index, (field_name, _) in enumerate(specs)}
    # qualified child tag -> (field name, spec); the last declaration of a tag wins, as it always has
    by_tag: dict[str, tuple[str, _FieldSpec]] = {}
    wrappers: dict[str, dict[str, tuple[str, _FieldSpec]]] = {}
    attr_lines: list[str] = []
    text_lines: list[str] = []
    init_lines: list[str] = []
    # every field starts at its default, as the dataclass sets it; the object is then filled in
    # directly (the compiled __init__ does nothing but assign, and skipping its call saves a frame)
    store_lines = ["    o = new(cls)"]
    for field in dataclasses.fields(cls):
        name = local.setdefault(field.name, f"x{len(local)}")
        if field.default_factory is list:
            init_lines.append(f"    {name} = []")
            store_lines.append(f"    o.{field.name} = {name}")
        elif field.default_factory is not dataclasses.MISSING:  # a required child: an empty one
            env[f"_f_{field.name}"] = field.default_factory
            init_lines.append(f"    {name} = None")
            store_lines.append(f"    o.{field.name} = _f_{field.name}() if {name} is None else {name}")
        else:
            env[f"_d_{field.name}"] = field.default
            init_lines.append(f"    {name} = _d_{field.name}")
            store_lines.append(f"    o.{field.name} = {name}")
    for field_name, spec in specs:
        name = local[field_name]
        if spec.kind == "attr":
            xml_name = spec.xml_name or field_name
            value = _value_expr("raw", spec.value_type, f"<{tag} {xml_name}>", env)
            keyword = "if" if not attr_lines else "elif"
            attr_lines += [f"        {keyword} key == {xml_name!r}:", f"            {name} = {value}"]
        elif spec.kind == "text":
            value = _value_expr("t", spec.value_type, f"<{tag}>", env)
            text_lines += ["    t = el.text", "    if t is not None:", f"        {name} = {value}"]
            if spec.value_type is str:
                text_lines += ["    else:", f"        {name} = ''"]  # <x></x> holds "", as Go reads it
        else:
            xml_name = spec.xml_name or (spec.cls.TAG if spec.cls is not None else field_name)
            child_ns = namespace if spec.cls is None else (spec.cls.NAMESPACE or namespace)
            if spec.wrapper:
                inner = wrappers.setdefault(_qualified(spec.wrapper, namespace), {})
                inner[_qualified(xml_name, child_ns)] = (field_name, spec)
            else:
                by_tag[_qualified(xml_name, child_ns)] = (field_name, spec)

    def placing(qualified: str, field_name: str, spec: _FieldSpec, item: str, pad: str) -> list[str]:
        name = local[field_name]
        if spec.kind == "text_child":
            where = f"<{tag}>/<{qualified}>"
            return [f"{pad}{name} = {_value_expr(f'({item}.text or _EMPTY)', spec.value_type, where, env)}"]
        env[f"_r{name}"] = _child_reader(spec.cls)
        if spec.kind == "children":
            return [f"{pad}{name}.append(_r{name}({item}))"]
        return [f"{pad}{name} = _r{name}({item})"]

    env["_EMPTY"] = ""
    child_lines: list[str] = []
    for qualified, (field_name, spec) in by_tag.items():
        child_lines += [f"        {'elif' if child_lines else 'if'} t == {qualified!r}:"]
        child_lines += placing(qualified, field_name, spec, "sub", "            ")
    for wrapper, inner in wrappers.items():
        if wrapper in by_tag:
            continue  # the direct child of that name is read instead, as it always has been
        child_lines += [f"        {'elif' if child_lines else 'if'} t == {wrapper!r}:"]
        child_lines += ["            for item in sub:", "                it = item.tag"]
        for index, (qualified, (field_name, spec)) in enumerate(inner.items()):
            child_lines += [f"                {'elif' if index else 'if'} it == {qualified!r}:"]
            child_lines += placing(qualified, field_name, spec, "item", "                    ")
    lines = ["def read(el):", *init_lines]
    if attr_lines:
        lines += ["    for key, raw in el.items():", *attr_lines]
    lines += text_lines
    if child_lines:
        lines += ["    for sub in el:", "        t = sub.tag", *child_lines]
    lines += [*store_lines, "    return o"]
    # Produces ``read(el)``: one pass over the element's attributes and children, matching each
    # qualified tag by an if/elif chain and filling the new object's slots directly. Faster than a
    # generic reader because there is no per-field dispatch and no dataclass ``__init__`` call.
    # The file name tells the readers apart in profiles.
    exec(compile("\n".join(lines), f"<reader of {cls.__name__}>", "exec"), env)
    reader = env["read"]
    reader.__qualname__ = f"{cls.__name__}._read"
    return reader


def _compile_copier(cls: Any) -> Any:
    """``_copy(self)`` of ``cls``: child elements are copied, every other value (str, int, bool or
    None) is shared."""
    env: dict[str, Any] = {"cls": cls, "new": object.__new__}
    kinds = {field_name: spec.kind for field_name, spec in cls._SPECS}
    lines = ["def _copy(self):", "    o = new(cls)"]  # filled in directly, as the reader does
    for field in dataclasses.fields(cls):
        kind = kinds.get(field.name)
        if kind == "children":
            value = f"[c._copy() for c in self.{field.name}]"
        elif kind == "child":
            value = f"None if (c := self.{field.name}) is None else c._copy()"
        else:
            value = f"self.{field.name}"
        lines.append(f"    o.{field.name} = {value}")
    source = "\n".join([*lines, "    return o"])
    # Produces ``_copy(self)``: a copy that recurses only into child elements and shares scalars.
    # Faster than ``copy.deepcopy``, which keeps a memo and inspects every value's type.
    exec(compile(source, f"<copier of {cls.__name__}>", "exec"), env)  # generated from the fields
    copier = env["_copy"]
    copier.__qualname__ = f"{cls.__name__}._copy"
    return copier


# ---------------------------------------------------------------- JSON as Go writes the structs

_GO_ZERO: dict[type, Any] = {str: "", int: 0, bool: False}


def go_field_name(field_name: str) -> str:
    """The Go name a Python field has unless declared otherwise (``startup_policy`` -> ``StartupPolicy``)."""
    return "".join(part[:1].upper() + part[1:] for part in field_name.split("_"))


def go_time(value: str) -> str:
    """A timestamp as ``metav1.Time`` marshals it: UTC, RFC 3339, whole seconds."""
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return value
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _go_zero_struct(cls: Any) -> dict[str, Any]:
    """The JSON of a Go struct left at its zero value (a non-pointer field the XML did not fill)."""
    result: dict[str, Any] = cls()._go_json()
    return result


def _go_value_lines(key: str, field_name: str, spec: _FieldSpec, namespace: dict[str, Any]) -> list[str]:
    go = spec.go
    if go.pointer or spec.kind == "children":
        absent = "None"
    elif spec.kind == "child":
        namespace[f"_zero_{field_name}"] = lambda cls=spec.cls: _go_zero_struct(cls)
        absent = f"_zero_{field_name}()"
    else:
        absent = repr(_GO_ZERO[spec.value_type])
    if go.unread:
        return [f"    d[{key}] = {absent}"]
    lines = [f"    v = self.{field_name}"]
    if spec.kind == "children":
        return [*lines, f"    d[{key}] = [c._go_json() for c in v] if v else None"]
    present = "v._go_json()" if spec.kind == "child" else "go_time(v)" if go.time else "v"
    return [*lines, f"    d[{key}] = {absent} if v is None else {present}"]


def _compile_go_json(
    name: str, specs: list[tuple[str, _FieldSpec]], xml_name: str | None, extra: dict[str, Any]
) -> Callable[[Any], dict[str, Any]]:
    namespace: dict[str, Any] = {"go_time": go_time}
    lines = ["def _go_json(self):", "    d = {}"]
    if xml_name is not None:
        lines.append(f"    d['XMLName'] = {{'Space': '', 'Local': {xml_name!r}}}")
    for field_name, spec in specs:
        key = repr(spec.go.name or go_field_name(field_name))
        lines += _go_value_lines(key, field_name, spec, namespace)
    for go_name, value in extra.items():
        lines.append(f"    d[{go_name!r}] = {value!r}")  # literals: a fresh object on every call
    lines.append("    return d")
    # Produces ``_go_json(self)``: the dict ``encoding/json`` would write for the Go struct, with Go
    # field names and zero values as constants. Faster than resolving names and zero values through
    # the field specs on every call (GetDomain and every domain event go through it).
    exec("\n".join(lines), namespace)  # generated from the declarations above
    writer: Callable[[Any], dict[str, Any]] = namespace["_go_json"]
    writer.__qualname__ = f"{name}._go_json"
    return writer
