// pagecache: how much of each file is in the page cache, and how much of
// that in 2 MiB folios (which a mapping maps one TLB entry each; see
// docs/PERFORMANCE.md, "The page cache decides the page size"). Reads only
// cached pages (mincore first), so it does not change what it measures.
//
// usage: pagecache FILE...   prints: FILE cached_MB of total_MB, pmd_MB in 2 MiB folios
#define _DEFAULT_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

// FilePmdMapped of the mapping that starts at `p`, in kB (-1 if not found)
static long pmd_kb(const void * p) {
    char want[32], line[512];
    snprintf(want, sizeof want, "%lx-", (unsigned long) p);
    FILE * f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    long kb = -1;
    int in = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, want, strlen(want)) == 0) in = 1;
        else if (in && sscanf(line, "FilePmdMapped: %ld kB", &kb) == 1) break;
    }
    fclose(f);
    return kb;
}

int main(int argc, char ** argv) {
    const long page = sysconf(_SC_PAGESIZE);
    for (int i = 1; i < argc; i++) {
        int fd = open(argv[i], O_RDONLY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) { printf("%s unreadable\n", argv[i]); continue; }
        size_t n = (size_t) st.st_size, pages = (n + page - 1) / page;
        unsigned char * p = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
        unsigned char * vec = malloc(pages);
        if (p == MAP_FAILED || !vec || mincore(p, n, vec) != 0) { printf("%s: mincore failed\n", argv[i]); return 1; }
        size_t cached = 0;
        volatile unsigned char sink = 0;
        for (size_t k = 0; k < pages; k++) {
            if (vec[k] & 1) { cached++; sink ^= p[k * page]; }  // touch cached pages only
        }
        (void) sink;
        long kb = pmd_kb(p);
        printf("%s %.1f of %.1f MB cached, %.1f MB in 2 MiB folios\n", argv[i], cached * (double) page / 1e6,
               n / 1e6, kb < 0 ? 0.0 : kb * 1024 / 1e6);
        munmap(p, n); free(vec); close(fd);
    }
    return 0;
}
