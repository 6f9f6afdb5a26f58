/* sudo for the test guests: whoever may execute this file (installed setuid root, mode 4750, group "sudo")
 * runs the command as root without a password, like CirrOS's NOPASSWD rule for its default user. */
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (setgroups(0, NULL) != 0 || setgid(0) != 0 || setuid(0) != 0) {
        perror("sudo");
        return 1;
    }
    setenv("HOME", "/root", 1);
    setenv("USER", "root", 1);
    setenv("LOGNAME", "root", 1);
    setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 1); /* sudo's secure_path */
    if (argc < 2) {
        fputs("usage: sudo -i | -s | COMMAND [ARG...]\n", stderr);
        return 1;
    }
    if (argc == 2 && strcmp(argv[1], "-i") == 0) {
        if (chdir("/root") != 0) perror("sudo: /root");
        execl("/bin/sh", "-sh", (char *)NULL);
        perror("sudo: /bin/sh");
        return 127;
    }
    if (argc == 2 && strcmp(argv[1], "-s") == 0) {
        execl("/bin/sh", "sh", (char *)NULL);
        perror("sudo: /bin/sh");
        return 127;
    }
    execvp(argv[1], argv + 1);
    fprintf(stderr, "sudo: %s: ", argv[1]);
    perror(NULL);
    return 127;
}
