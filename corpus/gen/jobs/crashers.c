/* Small native programs that crash for real; built at generation time with cc. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int depth(int n) { volatile char pad[4096]; pad[0] = (char)n; return n ? depth(n + 1) + pad[0] : 0; }

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "segv";
    printf("preprocessor v0.3: mode=%s\n", what);
    fflush(stdout);
    if (!strcmp(what, "segv")) {
        int *volatile p = NULL;
        fprintf(stderr, "loading record index...\n");
        *p = 42;
    } else if (!strcmp(what, "double_free")) {
        char *b = malloc(64);
        strcpy(b, "tokenizer state");
        free(b);
        free(b);
    } else if (!strcmp(what, "heap_overflow")) {
        char *a = malloc(24);
        char *b = malloc(24);
        memset(a, 'A', 64);  /* clobbers b's chunk header */
        free(b);
        free(a);
    } else if (!strcmp(what, "fpe")) {
        volatile int z = argc - argc;
        printf("%d\n", 100 / z);
    } else if (!strcmp(what, "ill")) {
        __builtin_trap();
    } else if (!strcmp(what, "stack")) {
        printf("%d\n", depth(1));
    } else if (!strcmp(what, "abort_assert")) {
        fprintf(stderr, "shardreader: shard_reader.c:212: read_header: Assertion `hdr->magic == 0x5344' failed.\n");
        abort();
    }
    return 0;
}
