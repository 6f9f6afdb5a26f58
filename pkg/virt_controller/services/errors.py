"""The failure kinds of the template service."""


class TemplateError(ValueError):
    """The launcher pod cannot be rendered for this VMI (yet); the message says why."""


class PvcNotFoundError(TemplateError):
    """A volume names a PersistentVolumeClaim that does not exist (yet)."""
