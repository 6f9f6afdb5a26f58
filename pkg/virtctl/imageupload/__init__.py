"""``virtctl image-upload``: a local disk image to a DataVolume or PVC through CDI's upload proxy."""

from kubevirt.virtctl.imageupload.command import image_upload

__all__ = ["image_upload"]
