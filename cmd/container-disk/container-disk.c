/*
 * container-disk: what each containerDisk (and kernel-boot) container of a launcher pod runs.
 *
 * The launcher image's init container copies this file into the disk container, whose image may hold
 * nothing but its disk: so it is a static executable that needs no interpreter, no /tmp and almost no
 * CPU (the container is limited to 10m). It holds the container alive and announces it with a listening
 * unix socket "<copy-path>.sock"; virt-handler connects to it and finds this process (and so the image's
 * root directory) through the peer credentials. SIGTERM or SIGINT removes the socket and exits; so does
 * the socket's disappearance (checked every second): virt-launcher-monitor empties the container-disk
 * directory when the launcher ends, so a finished launcher pod (a migration's source) completes without
 * waiting for a signal the container runtime may never send.
 *
 *   container-disk --copy-path PATH    hold the container, listening on PATH.sock
 *   container-disk --no-op             exit at once (the pull-only init container)
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static volatile sig_atomic_t stopping;

static void on_signal(int signum) {
    (void)signum;
    stopping = 1;
}

static int usage(void) {
    fprintf(stderr, "usage: container-disk --copy-path PATH | --no-op\n");
    return 2;
}

int main(int argc, char **argv) {
    const char *copy_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-op") == 0) {
            return 0;
        } else if (strcmp(argv[i], "--copy-path") == 0 && i + 1 < argc) {
            copy_path = argv[++i];
        } else {
            return usage();
        }
    }
    if (copy_path == NULL) {
        return usage();
    }

    struct sockaddr_un address = {.sun_family = AF_UNIX};
    int length = snprintf(address.sun_path, sizeof(address.sun_path), "%s.sock", copy_path);
    if (length < 0 || (size_t)length >= sizeof(address.sun_path)) {
        fprintf(stderr, "container-disk: --copy-path: %s.sock is longer than a socket path may be\n", copy_path);
        return 1;
    }

    /* No SA_RESTART: a signal interrupts accept() so that the loop sees "stopping". */
    struct sigaction action = {.sa_handler = on_signal};
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);

    int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener < 0) {
        perror("container-disk: socket");
        return 1;
    }
    unlink(address.sun_path); /* a socket left by an earlier run of this container */
    if (bind(listener, (struct sockaddr *)&address, sizeof(address)) != 0 || listen(listener, 16) != 0) {
        fprintf(stderr, "container-disk: %s: %s\n", address.sun_path, strerror(errno));
        return 1;
    }

    /* Nothing is said on a connection: connecting is how virt-handler learns this process's PID. */
    struct pollfd waiting = {.fd = listener, .events = POLLIN};
    struct stat found;
    while (!stopping) {
        if (stat(address.sun_path, &found) != 0) {
            fprintf(stderr, "container-disk: %s is gone: exiting\n", address.sun_path);
            close(listener);
            return 0;
        }
        int ready = poll(&waiting, 1, 1000);
        if (ready < 0 && errno != EINTR) {
            perror("container-disk: poll");
            break;
        }
        if (ready <= 0) {
            continue;
        }
        int connection = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        if (connection >= 0) {
            close(connection);
        } else if (errno != EINTR && errno != ECONNABORTED) {
            perror("container-disk: accept");
            break;
        }
    }
    close(listener);
    unlink(address.sun_path);
    return stopping ? 0 : 1;
}
