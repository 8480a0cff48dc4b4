// The reference side of the grammar parity trace (C++, links the reference
// library's internal grammar functions, which its libllama.so exports).
// For each line of grammar_inputs.txt: parse the grammar file, print its
// compiled rules, then feed the byte chunks one by one through
// llama_grammar_accept_str and print, after each, the stacks (as rule:index
// positions), the partial UTF-8 state and which of a fixed set of candidate
// pieces the grammar rejects. src/sampling/grammar/trace.rs prints the same
// trace with ours; the unit test compares it with golden/grammar_trace.txt.
//
// Built and run by ffi-tests/gen_grammar_golden.sh.
#include "llama-grammar.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

static std::vector<std::vector<uint32_t>> candidate_pieces() {
    std::vector<std::vector<uint32_t>> c;
    for (uint32_t ch = 0x20; ch < 0x7f; ch++) c.push_back({ch});
    for (uint32_t ch : {0x0au, 0xe9u, 0x20acu, 0x65e5u, 0x3053u}) c.push_back({ch});
    for (const char * s : {"true", "e4", "- ", "12", "\"}"}) {
        std::vector<uint32_t> v;
        for (const char * p = s; *p; p++) v.push_back((uint8_t) *p);
        c.push_back(v);
    }
    for (auto & v : c) v.push_back(0);
    return c;
}

static std::string pos_str(const llama_grammar_rules & rules, const llama_grammar_element * e) {
    for (size_t r = 0; r < rules.size(); r++) {
        if (!rules[r].empty() && e >= rules[r].data() && e < rules[r].data() + rules[r].size()) {
            return std::to_string(r) + ":" + std::to_string(e - rules[r].data());
        }
    }
    return "?";
}

static void print_state(llama_grammar * g, const std::vector<std::vector<uint32_t>> & pieces) {
    const auto & rules = llama_grammar_get_rules(g);
    auto & stacks = llama_grammar_get_stacks(g);
    printf("stacks %zu:", stacks.size());
    for (const auto & s : stacks) {
        printf(" [");
        for (size_t i = 0; i < s.size(); i++) printf(i ? " %s" : "%s", pos_str(rules, s[i]).c_str());
        printf("]");
    }
    printf(" partial %u %d\n", g->partial_utf8.value, g->partial_utf8.n_remain);
    if (stacks.empty() || g->partial_utf8.n_remain != 0) {
        printf("rej: -\n");
        return;
    }
    llama_grammar_candidates cands;
    for (size_t i = 0; i < pieces.size(); i++) {
        cands.push_back({ i, pieces[i].data(), { 0, 0 }, (llama_token) i });
    }
    auto rejects = llama_grammar_reject_candidates_for_stack(rules, stacks[0], cands);
    for (size_t i = 1; i < stacks.size(); i++) {
        rejects = llama_grammar_reject_candidates_for_stack(rules, stacks[i], rejects);
    }
    std::vector<int> mask(pieces.size(), 0);
    for (const auto & r : rejects) mask[r.index] = 1;
    printf("rej:");
    for (size_t i = 0; i < mask.size(); i++) printf("%d", mask[i]);
    printf("\n");
}

static std::string unescape(const std::string & l) {
    std::string t;
    for (size_t i = 0; i < l.size(); i++) {
        if (l[i] == '\\' && i + 1 < l.size()) {
            t.push_back(l[i + 1] == 'n' ? '\n' : l[i + 1]);
            i++;
        } else {
            t.push_back(l[i]);
        }
    }
    return t;
}

int main(int argc, char ** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s GRAMMARS_DIR INPUTS MALFORMED\n", argv[0]);
        return 2;
    }
    const auto pieces = candidate_pieces();
    std::ifstream in(argv[2]);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        const auto tab = line.find('\t');
        const std::string name = line.substr(0, tab);
        std::ifstream gf(std::string(argv[1]) + "/" + name + ".gbnf");
        std::stringstream ss;
        ss << gf.rdbuf();
        const std::string text = ss.str();
        printf("== %s\n", name.c_str());
        llama_grammar_parser parser;
        if (!parser.parse(text.c_str())) {
            printf("parse failed\n");
            continue;
        }
        printf("rules %zu\n", parser.rules.size());
        for (size_t r = 0; r < parser.rules.size(); r++) {
            printf("r%zu:", r);
            for (const auto & e : parser.rules[r]) printf(" %d:%u", (int) e.type, e.value);
            printf("\n");
        }
        llama_grammar * g = llama_grammar_init_impl(nullptr, text.c_str(), "root", false, nullptr, 0, nullptr, 0);
        if (!g) {
            printf("init failed\n");
            continue;
        }
        print_state(g, pieces);
        std::stringstream chunks(line.substr(tab + 1));
        std::string hex;
        while (chunks >> hex) {
            std::string bytes;
            for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes.push_back((char) std::stoi(hex.substr(i, 2), nullptr, 16));
            printf("chunk %s\n", hex.c_str());
            try {
                llama_grammar_accept_str(*g, bytes);
            } catch (const std::exception &) {
                printf("EMPTY\n");
                break;
            }
            print_state(g, pieces);
        }
        llama_grammar_free_impl(g);
    }
    // accepted or refused: grammar texts (see grammar_malformed.txt)
    std::ifstream mf(argv[3]);
    std::getline(mf, line);  // the header comment
    int n = 0;
    while (std::getline(mf, line)) {
        const std::string text = unescape(line);
        llama_grammar * g = llama_grammar_init_impl(nullptr, text.c_str(), "root", false, nullptr, 0, nullptr, 0);
        printf("grammar %d: %s\n", n++, g ? "accepted" : "refused");
        llama_grammar_free_impl(g);
    }
    return 0;
}
