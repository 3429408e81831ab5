/* A CPU-bound C program for the symbolizer tests: two hot functions called from main, and `mix`,
 * which is inlined into hash_loop unless NO_INLINE is defined. VARIANT changes the code (and so the
 * build ID) so that each test can have a binary of its own. Usage: burn SECONDS */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef VARIANT
#define VARIANT 1
#endif

#ifdef NO_INLINE
#define MIX_ATTR __attribute__((noinline))
#else
#define MIX_ATTR static inline __attribute__((always_inline))
#endif

static volatile unsigned long sink;
/* Read at every step so that the modulo is a real division (a constant one compiles to a mask or a
 * multiply and leaves sum_squares too few samples to be sure to appear in a short profile). */
static volatile unsigned long divisor = 7 + VARIANT;

MIX_ATTR unsigned long mix(unsigned long x) {
    for (int i = 0; i < 64; i++) x = x * 6364136223846793005UL + 1442695040888963407UL + VARIANT;
    return x;
}

__attribute__((noinline)) unsigned long hash_loop(unsigned long n) {
    unsigned long acc = 0;
    for (unsigned long i = 0; i < n; i++) acc += mix(i);
    return acc;
}

__attribute__((noinline)) unsigned long sum_squares(unsigned long n) {
    unsigned long acc = 0;
    for (unsigned long i = 0; i < n; i++) acc += i * i % divisor;
    return acc;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    clock_t end = clock() + (clock_t)(seconds * CLOCKS_PER_SEC);
    while (clock() < end) {
        sink += hash_loop(20000);
        sink += sum_squares(200000);
    }
    printf("%lu\n", sink);
    return 0;
}
