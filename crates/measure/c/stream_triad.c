/* Reference STREAM triad (a = b + s*c), the yardstick of `cosched bench
 * kernels`. Written the way STREAM writes it: three malloc'd double arrays,
 * first-touch initialisation, timed passes, 24 bytes counted per element.
 * Usage: stream_triad ARRAY_MIB PASSES ; prints "wall_s bandwidth_mb_s checksum". */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s ARRAY_MIB PASSES\n", argv[0]);
        return 2;
    }
    size_t n = (size_t)atol(argv[1]) * 1024 * 1024 / sizeof(double);
    long passes = atol(argv[2]);
    double *a = malloc(n * sizeof(double));
    double *b = malloc(n * sizeof(double));
    double *c = malloc(n * sizeof(double));
    if (!a || !b || !c) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        a[i] = 1.0;
        b[i] = 2.0;
        c[i] = 0.5;
    }
    const double s = 3.0;
    double t0 = now();
    for (long p = 0; p < passes; p++) {
        for (size_t i = 0; i < n; i++)
            a[i] = b[i] + s * c[i];
        /* Keep each pass observable so the compiler cannot fold passes. */
        __asm__ volatile("" : : "r"(a) : "memory");
    }
    double wall = now() - t0;
    double sum = 0.0;
    for (size_t i = 0; i < n; i += 4096)
        sum += a[i];
    printf("%.9f %.3f %.6f\n", wall, 24.0 * (double)n * passes / wall / 1e6, sum);
    free(a);
    free(b);
    free(c);
    return 0;
}
