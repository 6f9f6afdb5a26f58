/*
 * /usr/bin/virt-launcher-monitor in the launcher image: carries the file capability
 * cap_net_bind_service=ep and hands it on to the Python monitor, which it then becomes.
 *
 * KubeVirt's non-root compute container drops every capability but NET_BIND_SERVICE (the launcher's DHCP
 * server binds ports 67 and 547). Kubernetes only bounds a non-root process by the capabilities a pod
 * adds; the process holds one after exec only through a file capability, and a file capability on a
 * script does nothing. So the container's entrypoint is this program: the kernel gives it the capability
 * at exec (no_new_privs keeps it, the runtime having held it), and it makes the capability inheritable and
 * ambient, which survives the exec into the interpreter. As root, or without the capability, it just
 * execs the monitor.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MONITOR
#define MONITOR "/opt/kubevirt/bin/virt-launcher-monitor"
#endif

static void pass_on_net_bind_service(void) {
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
    const unsigned int bit = 1u << (CAP_NET_BIND_SERVICE % 32);
    const int word = CAP_NET_BIND_SERVICE / 32;

    if (syscall(SYS_capget, &header, data) != 0 || !(data[word].permitted & bit))
        return; /* nothing to pass on */
    data[word].inheritable |= bit;
    if (syscall(SYS_capset, &header, data) != 0) {
        fprintf(stderr, "virt-launcher-monitor: capset: %s\n", strerror(errno));
        return;
    }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE, 0, 0) != 0)
        fprintf(stderr, "virt-launcher-monitor: raising NET_BIND_SERVICE: %s\n", strerror(errno));
}

int main(int argc, char **argv) {
    (void)argc;
    if (geteuid() != 0)
        pass_on_net_bind_service();
    argv[0] = MONITOR;
    execv(MONITOR, argv);
    fprintf(stderr, "virt-launcher-monitor: exec %s: %s\n", MONITOR, strerror(errno));
    return 127;
}
