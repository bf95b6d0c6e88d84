/* writes a binary shard file; reports write errors like most C tools do */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "shard.bin";
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); return 1; }
    static char buf[1 << 16];
    memset(buf, 7, sizeof buf);
    for (int i = 0; i < 4096; i++) {
        if (fwrite(buf, 1, sizeof buf, f) != sizeof buf || fflush(f) != 0) {
            fprintf(stderr, "shardwriter: error writing %s after %d chunks: %s\n", path, i, strerror(errno));
            return 2;
        }
    }
    fclose(f);
    return 0;
}
