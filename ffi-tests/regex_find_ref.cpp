// The reference side of the trigger-pattern check: what std::regex (the
// engine the reference's lazy grammars use, libstdc++ 12) finds, with the
// reference's llama_grammar_trigger_pattern::find logic: a full match for
// "^...$" patterns, else a search; the start of the first non-empty capture
// group, else of the match; -1 for none. Prints one line per case of
// regex_cases.txt; golden/regex_find.txt is its output
// (ffi-tests/gen_grammar_golden.sh), compared by the Rust unit test
// regex_find_equals_std_regex.
#include <cstdio>
#include <fstream>
#include <regex>
#include <string>

static std::string unescape(const std::string & l) {
    std::string t;
    for (size_t i = 0; i < l.size(); i++) {
        if (l[i] == '\\' && i + 1 < l.size()) {
            const char c = l[i + 1];
            t.push_back(c == 'n' ? '\n' : c == 't' ? '\t' : c);
            i++;
        } else {
            t.push_back(l[i]);
        }
    }
    return t;
}

int main(int argc, char ** argv) {
    if (argc < 2) return 2;
    std::ifstream in(argv[1]);
    std::string line;
    std::getline(in, line);
    int n = 0;
    while (std::getline(in, line)) {
        const auto tab = line.find('\t');
        const std::string pattern = unescape(line.substr(0, tab));
        const std::string input = unescape(line.substr(tab + 1));
        std::regex regex(pattern);
        auto start_of = [](const std::smatch & m) {
            for (size_t i = 1; i < m.size(); i++) {
                if (m.length(i) > 0) return (long) m.position(i);
            }
            return (long) m.position(0);
        };
        long found = -1;
        std::smatch m;
        if (!pattern.empty() && pattern.front() == '^' && pattern.back() == '$' && std::regex_match(input, m, regex)) {
            found = start_of(m);
        } else if (std::regex_search(input, m, regex)) {
            found = start_of(m);
        }
        printf("case %d: %ld\n", n++, found);
    }
    return 0;
}
