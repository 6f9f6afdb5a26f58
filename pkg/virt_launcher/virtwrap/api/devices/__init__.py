"""The ``<devices>`` element; each device kind has its module beside this one (as in virt-manager's
``virtinst/devices/``)."""

from __future__ import annotations

from ..xmlmodel import XMLElement, child, children, element, text_child
from .char import Channel, Console, Serial
from .controller import Controller
from .disk import Disk
from .filesystem import FilesystemDevice
from .graphics import Graphics
from .hostdev import HostDevice
from .input import Input
from .interface import Interface
from .memballoon import MemBalloon
from .memory import MemoryDevice
from .panic import PanicDevice
from .redirdev import RedirectedDevice
from .rng import Rng
from .sound import SoundCard
from .tpm import TPM
from .video import Video
from .vsock import VSOCK
from .watchdog import Watchdog


@element("devices")
class Devices(XMLElement):
    emulator: str | None = text_child()
    interfaces: list[Interface] = children(Interface)
    channels: list[Channel] = children(Channel)
    host_devices: list[HostDevice] = children(HostDevice)
    panic_devices: list[PanicDevice] = children(PanicDevice)
    controllers: list[Controller] = children(Controller)
    video: list[Video] = children(Video)
    graphics: list[Graphics] = children(Graphics)
    ballooning: MemBalloon | None = child(MemBalloon)
    disks: list[Disk] = children(Disk)
    inputs: list[Input] = children(Input)
    serials: list[Serial] = children(Serial)
    consoles: list[Console] = children(Console)
    watchdogs: list[Watchdog] = children(Watchdog)
    rng: Rng | None = child(Rng)
    filesystems: list[FilesystemDevice] = children(FilesystemDevice)
    redirs: list[RedirectedDevice] = children(RedirectedDevice)
    sound_cards: list[SoundCard] = children(SoundCard)
    tpms: list[TPM] = children(TPM, go="TPMs")
    vsock: VSOCK | None = child(VSOCK, go="VSOCK")
    memory: MemoryDevice | None = child(MemoryDevice)
