"""Kubernetes' own checks of ``affinity`` and ``topologySpreadConstraints``, which KubeVirt runs on VMIs.

KubeVirt reports each Kubernetes ``field.Error`` as a cause whose message is the error's full text
(``<field>: Invalid value: "Foo": not a valid selector operator``) and whose field is the error's field.
"""

from __future__ import annotations

import json

from kubevirt.admission import causes as c
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.field import Path
from kubevirt.admission.json_fields import items, obj, opt_obj, text
from kubevirt.admission.k8s_names import dns1123_label, dns1123_subdomain, label_value, qualified_name
from kubevirt_api.view import JSON

_SCHEDULE_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")


def _go_quoted(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(str(value), ensure_ascii=False)


def _error(field: Path, body: str) -> StatusCause:
    return c.invalid(field, f"{field}: {body}")


def invalid(field: Path, value: object, detail: str) -> StatusCause:
    return _error(field, f"Invalid value: {_go_quoted(value)}: {detail}")


def required(field: Path, detail: str) -> StatusCause:
    return _error(field, f"Required value: {detail}" if detail else "Required value")


def forbidden(field: Path, detail: str) -> StatusCause:
    return _error(field, f"Forbidden: {detail}")


def _values(requirement: JSON) -> list[str]:
    raw = requirement.get("values")
    return [str(v) for v in raw] if isinstance(raw, list) else []


def _label_name(name: str, field: Path) -> list[StatusCause]:
    return [invalid(field, name, message) for message in qualified_name(name)]


def _set_operator(
    field: Path, operator: str, values: list[str], *, extra_operators: tuple[str, ...]
) -> list[StatusCause]:
    """The operator/values rules shared by label and node selector requirements (Gt/Lt: nodes only)."""
    if operator in ("In", "NotIn"):
        if not values:
            return [required(field.child("values"), "must be specified when `operator` is 'In' or 'NotIn'")]
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            detail = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            return [forbidden(field.child("values"), detail)]
    elif operator in extra_operators:
        if len(values) != 1:
            detail = "must be specified single value when `operator` is 'Lt' or 'Gt'"
            return [required(field.child("values"), detail)]
    else:
        return [invalid(field.child("operator"), operator, "not a valid selector operator")]
    return []


def label_selector(selector: JSON | None, field: Path) -> list[StatusCause]:
    """``metav1validation.ValidateLabelSelector``."""
    if selector is None:
        return []
    out: list[StatusCause] = []
    labels = obj(selector, "matchLabels")
    for key in sorted(labels):
        out.extend(_label_name(key, field.child("matchLabels")))
        value = labels[key]
        out.extend(invalid(field.child("matchLabels"), value, m) for m in label_value(str(value)))
    for i, requirement in enumerate(items(selector, "matchExpressions")):
        where = field.child("matchExpressions").index(i)
        operator, values = text(requirement, "operator"), _values(requirement)
        out.extend(_set_operator(where, operator, values, extra_operators=()))
        out.extend(_label_name(text(requirement, "key"), where.child("key")))
        for j, value in enumerate(values):
            out.extend(invalid(where.child("values").index(j), value, m) for m in label_value(value))
    return out


def _node_selector_requirement(requirement: JSON, field: Path) -> list[StatusCause]:
    operator, values = text(requirement, "operator"), _values(requirement)
    out = _set_operator(field, operator, values, extra_operators=("Gt", "Lt"))
    out.extend(_label_name(text(requirement, "key"), field.child("key")))
    return out


def _node_field_requirement(requirement: JSON, field: Path) -> list[StatusCause]:
    operator, values = text(requirement, "operator"), _values(requirement)
    out: list[StatusCause] = []
    if operator in ("In", "NotIn"):
        if len(values) != 1:
            message = "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
            out.append(required(field.child("values"), message))
    else:
        out.append(invalid(field.child("operator"), operator, "not a valid selector operator"))
    key = text(requirement, "key")
    if key != "metadata.name":
        out.append(invalid(field.child("key"), key, "not a valid field selector key"))
    else:
        for i, value in enumerate(values):
            out.extend(invalid(field.child("values").index(i), value, m) for m in dns1123_subdomain(value))
    return out


def _node_selector_term(term: JSON, field: Path) -> list[StatusCause]:
    out: list[StatusCause] = []
    for j, requirement in enumerate(items(term, "matchExpressions")):
        out.extend(_node_selector_requirement(requirement, field.child("matchExpressions").index(j)))
    for j, requirement in enumerate(items(term, "matchFields")):
        out.extend(_node_field_requirement(requirement, field.child("matchFields").index(j)))
    return out


def _weight(term: JSON, field: Path) -> list[StatusCause]:
    weight = term.get("weight", 0)
    if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
        return [invalid(field.child("weight"), weight, "must be in the range 1-100")]
    return []


def _node_affinity(affinity: JSON, field: Path) -> list[StatusCause]:
    out: list[StatusCause] = []
    required_terms = opt_obj(affinity, "requiredDuringSchedulingIgnoredDuringExecution")
    if required_terms is not None:
        terms_field = field.child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
        terms = items(required_terms, "nodeSelectorTerms")
        if not terms:
            out.append(required(terms_field, "must have at least one node selector term"))
        for i, term in enumerate(terms):
            out.extend(_node_selector_term(term, terms_field.index(i)))
    preferred_field = field.child("preferredDuringSchedulingIgnoredDuringExecution")
    for i, term in enumerate(items(affinity, "preferredDuringSchedulingIgnoredDuringExecution")):
        out.extend(_weight(term, preferred_field.index(i)))
        out.extend(_node_selector_term(obj(term, "preference"), preferred_field.index(i).child("preference")))
    return out


def _pod_affinity_term(term: JSON, field: Path) -> list[StatusCause]:
    out = label_selector(opt_obj(term, "labelSelector"), field.child("labelSelector"))
    out.extend(label_selector(opt_obj(term, "namespaceSelector"), field.child("namespaceSelector")))
    raw_namespaces = term.get("namespaces")
    for name in raw_namespaces if isinstance(raw_namespaces, list) else []:
        out.extend(invalid(field.child("namespace"), name, m) for m in dns1123_label(str(name)))
    topology_key = text(term, "topologyKey")
    if not topology_key:
        out.append(required(field.child("topologyKey"), "can not be empty"))
    out.extend(_label_name(topology_key, field.child("topologyKey")))
    return out


def _pod_affinity(affinity: JSON, field: Path) -> list[StatusCause]:
    out: list[StatusCause] = []
    required_field = field.child("requiredDuringSchedulingIgnoredDuringExecution")
    for i, term in enumerate(items(affinity, "requiredDuringSchedulingIgnoredDuringExecution")):
        out.extend(_pod_affinity_term(term, required_field.index(i)))
    preferred_field = field.child("preferredDuringSchedulingIgnoredDuringExecution")
    for i, term in enumerate(items(affinity, "preferredDuringSchedulingIgnoredDuringExecution")):
        out.extend(_weight(term, preferred_field.index(i)))
        out.extend(
            _pod_affinity_term(
                obj(term, "podAffinityTerm"), preferred_field.index(i).child("podAffinityTerm")
            )
        )
    return out


def affinity(field: Path, spec: JSON) -> list[StatusCause]:
    """``validateSpecAffinity`` (field is the VMI spec path; KubeVirt passes it unchanged)."""
    value = opt_obj(spec, "affinity")
    if value is None:
        return []
    out: list[StatusCause] = []
    node = opt_obj(value, "nodeAffinity")
    if node is not None:
        out.extend(_node_affinity(node, field.child("nodeAffinity")))
    pod = opt_obj(value, "podAffinity")
    if pod is not None:
        out.extend(_pod_affinity(pod, field.child("podAffinity")))
    anti = opt_obj(value, "podAntiAffinity")
    if anti is not None:
        out.extend(_pod_affinity(anti, field.child("podAntiAffinity")))
    return out


def topology_spread_constraints(field: Path, spec: JSON) -> list[StatusCause]:
    """``validateSpecTopologySpreadConstraints``."""
    constraints = items(spec, "topologySpreadConstraints")
    base = field.child("topologySpreadConstraints")
    out: list[StatusCause] = []
    for i, constraint in enumerate(constraints):
        where = base.index(i)
        skew = constraint.get("maxSkew", 0)
        if not isinstance(skew, int) or skew <= 0:
            out.append(invalid(where.child("maxSkew"), skew, "must be greater than zero"))
        key = text(constraint, "topologyKey")
        if not key:
            out.append(required(where.child("topologyKey"), "can not be empty"))
        action = text(constraint, "whenUnsatisfiable")
        if action not in _SCHEDULE_ACTIONS:
            supported = ", ".join(f'"{a}"' for a in _SCHEDULE_ACTIONS)
            out.append(
                _error(
                    where.child("whenUnsatisfiable"),
                    f"Unsupported value: {_go_quoted(action)}: supported values: {supported}",
                )
            )
        for later in constraints[i + 1 :]:
            if text(later, "topologyKey") == key and text(later, "whenUnsatisfiable") == action:
                pair = f"{{{key}, {action}}}"
                out.append(
                    _error(
                        where.child("{topologyKey, whenUnsatisfiable}"),
                        f"Duplicate value: {_go_quoted(pair)}",
                    )
                )
                break
        min_domains = constraint.get("minDomains")
        if min_domains is not None:
            if not isinstance(min_domains, int) or min_domains <= 0:
                out.append(invalid(where.child("minDomains"), min_domains, "must be greater than zero"))
            if action != "DoNotSchedule":
                detail = f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
                out.append(invalid(where.child("minDomains"), min_domains, detail))
        out.extend(label_selector(opt_obj(constraint, "labelSelector"), where.child("labelSelector")))
    return out
