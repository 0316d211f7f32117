/* The planted proof of `sim live` (LIVE.md, issue 50): a tiny log that
 * appends one record per step to DIR/log, fsyncs it, and prints "ack N"
 * once record N is durable.
 *
 *   probe DIR retry   fsyncgate's mistake: a failed fsync is retried, and
 *                     the retry's success believed (the kernel dropped the
 *                     dirty pages at the failure, so the retry has nothing
 *                     left to write and succeeds): the record is
 *                     acknowledged and is not on the disk.
 *   probe DIR honest  a failed fsync (or write) is reported on stderr and
 *                     the program stops, acknowledging nothing more.
 *
 * Records are fixed-size lines "record N\n" padded to 64 bytes, written
 * with pwrite at N*64, so a checker can read back exactly which records a
 * crash kept. The directory is fsynced after the log is created. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RECORDS 6
#define RECORD_BYTES 64

static int fsync_retrying(int fd) {
    for (int attempt = 0; attempt < 3; attempt++) {
        if (fsync(fd) == 0) return 0;
        fprintf(stderr, "probe: fsync failed (%s), retrying\n", strerror(errno));
    }
    return -1;
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[2], "retry") != 0 && strcmp(argv[2], "honest") != 0)) {
        fprintf(stderr, "usage: probe DIR retry|honest\n");
        return 2;
    }
    int retry = strcmp(argv[2], "retry") == 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/log", argv[1]);
    if (mkdir(argv[1], 0755) != 0 && errno != EEXIST) { perror("probe: mkdir"); return 1; }
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0) { perror("probe: open"); return 1; }
    int dir = open(argv[1], O_RDONLY | O_DIRECTORY);
    if (dir < 0 || fsync(dir) != 0) { perror("probe: directory fsync"); return 1; }
    close(dir);
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int n = 1; n <= RECORDS; n++) {
        char record[RECORD_BYTES];
        memset(record, ' ', sizeof record);
        int len = snprintf(record, sizeof record, "record %d", n);
        record[len] = ' ';
        record[RECORD_BYTES - 1] = '\n';
        if (pwrite(fd, record, sizeof record, (off_t)(n - 1) * RECORD_BYTES) != (ssize_t)sizeof record) {
            fprintf(stderr, "probe: write of record %d failed: %s\n", n, strerror(errno));
            return 1;
        }
        int synced = retry ? fsync_retrying(fd) : fsync(fd);
        if (synced != 0) {
            fprintf(stderr, "probe: fsync of record %d failed: %s; not acknowledged\n", n, strerror(errno));
            return 1;
        }
        printf("ack %d\n", n);
    }
    close(fd);
    return 0;
}
