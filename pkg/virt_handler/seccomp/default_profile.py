"""containers/common's default seccomp profile (``pkg/seccomp.DefaultProfile``, the release KubeVirt
v1.6 vendors), as data: what is allowed, what is refused with which error, and on which architecture or
with which capability. Anything not named is refused with ENOSYS, so newer software falls back as it
would on an older kernel.

The order of the rules and of the names in each is the package's own, so the profile serialises to the
same bytes.
"""

from __future__ import annotations

from typing import Final

from .model import (
    ACT_ALLOW,
    ACT_ERRNO,
    OP_EQUAL_TO,
    OP_NOT_EQUAL,
    Arch,
    Architecture,
    Arg,
    Filter,
    Profile,
    Rule,
)


def _names(text: str) -> tuple[str, ...]:
    return tuple(text.split())


AF_NETLINK: Final = 16
NETLINK_AUDIT: Final = 9

ARCH_MAP: Final = (
    Architecture(Arch.X86_64, (Arch.X86, Arch.X32)),
    Architecture(Arch.AARCH64, (Arch.ARM,)),
    Architecture(Arch.MIPS64, (Arch.MIPS, Arch.MIPS64N32)),
    Architecture(Arch.MIPS64N32, (Arch.MIPS, Arch.MIPS64)),
    Architecture(Arch.MIPSEL64, (Arch.MIPSEL, Arch.MIPSEL64N32)),
    Architecture(Arch.MIPSEL64N32, (Arch.MIPSEL, Arch.MIPSEL64)),
    Architecture(Arch.S390X, (Arch.S390,)),
)

# Refused with EPERM whatever the container may do: obsolete calls, kexec, swap, NUMA page moves,
# userfaultfd and the like.
DENIED: Final = _names(
    """
    bdflush cachestat futex_requeue futex_wait futex_waitv futex_wake io_pgetevents io_pgetevents_time64
    kexec_file_load kexec_load map_shadow_stack migrate_pages move_pages nfsservctl nice oldfstat
    oldlstat oldolduname oldstat olduname pciconfig_iobase pciconfig_read pciconfig_write sgetmask
    ssetmask swapoff swapon syscall sysfs uselib userfaultfd ustat vm86 vm86old vmsplice
    """
)

ALLOWED: Final = _names(
    """
    _llseek _newselect accept accept4 access adjtimex alarm bind brk capget capset chdir chmod chown
    chown32 clock_adjtime clock_adjtime64 clock_getres clock_getres_time64 clock_gettime clock_gettime64
    clock_nanosleep clock_nanosleep_time64 clone clone3 close close_range connect copy_file_range creat
    dup dup2 dup3 epoll_create epoll_create1 epoll_ctl epoll_ctl_old epoll_pwait epoll_pwait2 epoll_wait
    epoll_wait_old eventfd eventfd2 execve execveat exit exit_group faccessat faccessat2 fadvise64
    fadvise64_64 fallocate fanotify_mark fchdir fchmod fchmodat fchmodat2 fchown fchown32 fchownat fcntl
    fcntl64 fdatasync fgetxattr flistxattr flock fork fremovexattr fsconfig fsetxattr fsmount fsopen
    fspick fstat fstat64 fstatat64 fstatfs fstatfs64 fsync ftruncate ftruncate64 futex futex_time64
    futimesat get_mempolicy get_robust_list get_thread_area getcpu getcwd getdents getdents64 getegid
    getegid32 geteuid geteuid32 getgid getgid32 getgroups getgroups32 getitimer getpeername getpgid
    getpgrp getpid getppid getpriority getrandom getresgid getresgid32 getresuid getresuid32 getrlimit
    getrusage getsid getsockname getsockopt gettid gettimeofday getuid getuid32 getxattr
    inotify_add_watch inotify_init inotify_init1 inotify_rm_watch io_cancel io_destroy io_getevents
    io_setup io_submit ioctl ioprio_get ioprio_set ipc keyctl kill landlock_add_rule
    landlock_create_ruleset landlock_restrict_self lchown lchown32 lgetxattr link linkat listen
    listxattr llistxattr lremovexattr lseek lsetxattr lstat lstat64 madvise mbind membarrier
    memfd_create memfd_secret mincore mkdir mkdirat mknod mknodat mlock mlock2 mlockall mmap mmap2 mount
    mount_setattr move_mount mprotect mq_getsetattr mq_notify mq_open mq_timedreceive
    mq_timedreceive_time64 mq_timedsend mq_timedsend_time64 mq_unlink mremap msgctl msgget msgrcv msgsnd
    msync munlock munlockall munmap name_to_handle_at nanosleep newfstatat open open_tree openat openat2
    pause pidfd_getfd pidfd_open pidfd_send_signal pipe pipe2 pivot_root pkey_alloc pkey_free
    pkey_mprotect poll ppoll ppoll_time64 prctl pread64 preadv preadv2 prlimit64 process_mrelease
    process_vm_readv process_vm_writev pselect6 pselect6_time64 ptrace pwrite64 pwritev pwritev2 read
    readahead readlink readlinkat readv reboot recv recvfrom recvmmsg recvmmsg_time64 recvmsg
    remap_file_pages removexattr rename renameat renameat2 restart_syscall rmdir rseq rt_sigaction
    rt_sigpending rt_sigprocmask rt_sigqueueinfo rt_sigreturn rt_sigsuspend rt_sigtimedwait
    rt_sigtimedwait_time64 rt_tgsigqueueinfo sched_get_priority_max sched_get_priority_min
    sched_getaffinity sched_getattr sched_getparam sched_getscheduler sched_rr_get_interval
    sched_rr_get_interval_time64 sched_setaffinity sched_setattr sched_setparam sched_setscheduler
    sched_yield seccomp select semctl semget semop semtimedop semtimedop_time64 send sendfile sendfile64
    sendmmsg sendmsg sendto set_mempolicy set_robust_list set_thread_area set_tid_address setfsgid
    setfsgid32 setfsuid setfsuid32 setgid setgid32 setgroups setgroups32 setitimer setns setpgid
    setpriority setregid setregid32 setresgid setresgid32 setresuid setresuid32 setreuid setreuid32
    setrlimit setsid setsockopt setuid setuid32 setxattr shmat shmctl shmdt shmget shutdown sigaltstack
    signal signalfd signalfd4 sigprocmask sigreturn socketcall socketpair splice stat stat64 statfs
    statfs64 statx symlink symlinkat sync sync_file_range syncfs sysinfo syslog tee tgkill time
    timer_create timer_delete timer_getoverrun timer_gettime timer_gettime64 timer_settime
    timer_settime64 timerfd_create timerfd_gettime timerfd_gettime64 timerfd_settime timerfd_settime64
    times tkill truncate truncate64 ugetrlimit umask umount umount2 uname unlink unlinkat unshare utime
    utimensat utimensat_time64 utimes vfork wait4 waitid waitpid write writev
    """
)

# personality(2) only for the execution domains programs ask for: Linux, its 32-bit variant, with
# UNAME26 or both, and the query (0xffffffff).
PERSONALITIES: Final = (0x0, 0x0008, 0x20000, 0x20008, 0xFFFFFFFF)

# Calls that exist (or are safe) only on some architectures, by Go architecture name.
ARCH_SPECIFIC: Final = (
    (("sync_file_range2", "swapcontext"), ("ppc64le",)),
    (
        _names("arm_fadvise64_64 arm_sync_file_range breakpoint cacheflush set_tls sync_file_range2"),
        ("arm", "arm64"),
    ),
    (("arch_prctl",), ("amd64", "x32")),
    (("modify_ldt",), ("amd64", "x32", "x86")),
    (("s390_pci_mmio_read", "s390_pci_mmio_write", "s390_runtime_instr"), ("s390", "s390x")),
    (("riscv_flush_icache",), ("riscv64",)),
)

# Not a symmetric pair: bpf is only in the allow rule, perf_event_open only in the deny rule; the rules
# at the end settle both again.
SYS_ADMIN_ALLOWED: Final = _names(
    "bpf fanotify_init lookup_dcookie quotactl quotactl_fd setdomainname sethostname setns"
)
SYS_ADMIN_DENIED: Final = _names(
    "fanotify_init lookup_dcookie perf_event_open quotactl quotactl_fd setdomainname sethostname setns"
)

# Allowed with the capability, EPERM without it (after the CAP_SYS_ADMIN pair, which differs).
CAPABILITY_GATED: Final = (
    ("CAP_SYS_CHROOT", ("chroot",)),
    ("CAP_SYS_MODULE", ("delete_module", "finit_module", "init_module", "query_module")),
    ("CAP_SYS_PACCT", ("acct",)),
    ("CAP_SYS_PTRACE", ("kcmp", "process_madvise")),
    ("CAP_SYS_RAWIO", ("ioperm", "iopl")),
    ("CAP_SYS_TIME", ("clock_settime", "clock_settime64", "settimeofday", "stime")),
    ("CAP_SYS_TTY_CONFIG", ("vhangup",)),
)


def _gated(capability: str, names: tuple[str, ...]) -> tuple[Rule, Rule]:
    return (
        Rule(names, ACT_ALLOW, includes=Filter(caps=(capability,))),
        Rule(names, ACT_ERRNO, errno="EPERM", excludes=Filter(caps=(capability,))),
    )


def _socket_rules() -> tuple[Rule, ...]:
    """Without CAP_AUDIT_WRITE an audit netlink socket is refused with EINVAL; other sockets are allowed."""
    no_audit = Filter(caps=("CAP_AUDIT_WRITE",))
    not_audit = Arg(2, NETLINK_AUDIT, OP_NOT_EQUAL)
    return (
        Rule(
            ("socket",),
            ACT_ERRNO,
            args=(Arg(0, AF_NETLINK, OP_EQUAL_TO), Arg(2, NETLINK_AUDIT, OP_EQUAL_TO)),
            excludes=no_audit,
            errno="EINVAL",
        ),
        Rule(("socket",), ACT_ALLOW, args=(not_audit,), excludes=no_audit),
        Rule(("socket",), ACT_ALLOW, args=(Arg(0, AF_NETLINK, OP_NOT_EQUAL),), excludes=no_audit),
        Rule(("socket",), ACT_ALLOW, args=(not_audit,), excludes=no_audit),
        Rule(("socket",), ACT_ALLOW, args=None, includes=no_audit),
    )


def _bpf_and_perf_rules() -> tuple[Rule, ...]:
    """bpf and perf_event_open: EPERM unless the container holds CAP_SYS_ADMIN or CAP_BPF; allowed with
    CAP_BPF or CAP_PERFMON respectively."""
    either = Filter(caps=("CAP_SYS_ADMIN", "CAP_BPF"))
    return (
        Rule(("bpf",), ACT_ERRNO, errno="EPERM", excludes=either),
        Rule(("bpf",), ACT_ALLOW, includes=Filter(caps=("CAP_BPF",))),
        Rule(("perf_event_open",), ACT_ERRNO, errno="EPERM", excludes=either),
        Rule(("perf_event_open",), ACT_ALLOW, includes=Filter(caps=("CAP_PERFMON",))),
    )


def default_profile() -> Profile:
    rules: list[Rule] = [
        Rule(DENIED, ACT_ERRNO, errno="EPERM"),
        Rule(ALLOWED, ACT_ALLOW),
        *(Rule(("personality",), ACT_ALLOW, args=(Arg(0, p, OP_EQUAL_TO),)) for p in PERSONALITIES),
        *(Rule(names, ACT_ALLOW, includes=Filter(arches=arches)) for names, arches in ARCH_SPECIFIC),
        *_gated("CAP_DAC_READ_SEARCH", ("open_by_handle_at",)),
        Rule(SYS_ADMIN_ALLOWED, ACT_ALLOW, includes=Filter(caps=("CAP_SYS_ADMIN",))),
        Rule(SYS_ADMIN_DENIED, ACT_ERRNO, errno="EPERM", excludes=Filter(caps=("CAP_SYS_ADMIN",))),
    ]
    for capability, names in CAPABILITY_GATED:
        rules += _gated(capability, names)
    rules += _socket_rules()
    rules += _bpf_and_perf_rules()
    return Profile(default_action=ACT_ERRNO, default_errno="ENOSYS", arch_map=ARCH_MAP, rules=tuple(rules))
