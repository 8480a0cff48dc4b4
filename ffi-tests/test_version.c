// The version strings: llama_version() is "minfer <version>" and
// llama_print_system_info() keeps the reference's "CPU : NAME = value | ..."
// shape, its feature values agree with the kernel's view of the CPU
// (/proc/cpuinfo), and it ends with the entry "minfer = <version> | ".
//
// usage: test_version VERSION   (VERSION: the version of Cargo.toml)
#include "test_util.h"

// The /proc/cpuinfo flag behind each feature name minfer reports.
static const char * cpuinfo_flag(const char * name) {
    static const char * const map[][2] = {
#if defined(__x86_64__)
        {"SSE3", "pni"}, {"SSSE3", "ssse3"}, {"AVX", "avx"}, {"AVX2", "avx2"}, {"F16C", "f16c"},
        {"FMA", "fma"}, {"BMI2", "bmi2"}, {"AVX512", "avx512f"}, {"AVX512_VNNI", "avx512_vnni"},
#elif defined(__aarch64__)
        {"NEON", "asimd"}, {"DOTPROD", "asimddp"}, {"FP16_VA", "fphp"},
#endif
        {NULL, NULL},
    };
    for (int i = 0; map[i][0] != NULL; i++) {
        if (strcmp(map[i][0], name) == 0) {
            return map[i][1];
        }
    }
    return NULL;
}

// The first "flags" (x86) or "Features" (arm) line of /proc/cpuinfo,
// with a space on both ends so that " flag " can be searched; "" if absent.
static void read_cpu_flags(char * out, size_t size) {
    out[0] = '\0';
    FILE * f = fopen("/proc/cpuinfo", "r");
    if (f == NULL) {
        return;
    }
    static char line[1 << 14];
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "flags", 5) == 0 || strncmp(line, "Features", 8) == 0) {
            const char * colon = strchr(line, ':');
            if (colon != NULL) {
                snprintf(out, size, "%s ", colon + 1);
                out[strcspn(out, "\n")] = ' ';
            }
            break;
        }
    }
    fclose(f);
}

int main(int argc, char ** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s VERSION\n", argv[0]);
        return 2;
    }
    const char * version = argv[1];
    char expected[256];

    snprintf(expected, sizeof(expected), "minfer %s", version);
    const char * v = llama_version();
    CHECK(v != NULL && strcmp(v, expected) == 0, "llama_version() is \"%s\", got \"%s\"", expected, v ? v : "(null)");

    const char * info = llama_print_system_info();
    CHECK(info != NULL, "llama_print_system_info() is not NULL");
    if (info == NULL) {
        return finish("version");
    }
    printf("%s\n", info);
    CHECK(llama_print_system_info() == info || strcmp(llama_print_system_info(), info) == 0, "a second call says the same");
    CHECK(strncmp(info, "CPU : ", 6) == 0, "starts with \"CPU : \": %s", info);

    // Walk the "NAME = value | " entries: SIMD features with 0/1, then the version.
    char flags[1 << 14];
    read_cpu_flags(flags, sizeof(flags));
    const char * p = info + 6;
    int n_features = 0;
    int saw_version = 0;
    while (*p != '\0') {
        char name[64], value[64];
        int n = 0;
        if (sscanf(p, "%63[A-Za-z0-9_] = %63[^ |] | %n", name, value, &n) != 2 || n == 0) {
            CHECK(0, "entry at \"%s\" has the shape \"NAME = value | \"", p);
            break;
        }
        p += n;
        if (strcmp(name, "minfer") == 0) {
            CHECK(strcmp(value, version) == 0, "minfer = %s (expected %s)", value, version);
            CHECK(*p == '\0', "the version is the last entry (rest: \"%s\")", p);
            saw_version = 1;
            continue;
        }
        n_features++;
        CHECK(strcmp(value, "0") == 0 || strcmp(value, "1") == 0, "%s = %s is 0 or 1", name, value);
        const char * flag = cpuinfo_flag(name);
        CHECK(flag != NULL, "%s is a feature name the test knows", name);
        if (flag != NULL && flags[0] != '\0') {
            char needle[80];
            snprintf(needle, sizeof(needle), " %s ", flag);
            const int has = strstr(flags, needle) != NULL;
            CHECK(has == (value[0] == '1'), "%s = %s, /proc/cpuinfo %s '%s'", name, value, has ? "has" : "lacks", flag);
        }
    }
    CHECK(saw_version, "an entry \"minfer = %s\"", version);
#if defined(__x86_64__) || defined(__aarch64__)
    CHECK(n_features > 0, "SIMD features are listed (%d)", n_features);
#endif
    return finish("version");
}
