"""The one failure kind of the template service."""


class TemplateError(ValueError):
    """The launcher pod cannot be rendered for this VMI (yet); the message says why."""
