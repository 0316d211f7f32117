/* `sim live`'s fork rule (LIVE.md): a fork while the process holds no
 * simulated descriptor is served (the child opens its own connection to
 * the disk, and its write is the parent's to read); a fork while one is
 * open is refused loudly (-1, and the run fails), since the descriptor's
 * open file description lives in the parent's memory.
 *
 *   forks DIR   prints "parent read: child" and "second fork: -1" */
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: forks DIR\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/x", argv[1]);
    pid_t child = fork();
    if (child == 0) {
        int fd = open(path, O_CREAT | O_WRONLY, 0644);
        if (fd < 0 || write(fd, "child\n", 6) != 6 || fsync(fd) != 0) _exit(1);
        close(fd);
        _exit(0);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || status != 0) return 1;
    int fd = open(path, O_RDONLY);
    char buf[16] = {0};
    if (fd < 0 || read(fd, buf, sizeof buf - 1) < 0) return 1;
    printf("parent read: %s", buf);
    fflush(stdout);
    printf("second fork: %d\n", (int)fork());
    return 0;
}
