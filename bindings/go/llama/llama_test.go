package llama

// The binding against the C example: on SmolLM2 the Go side must tokenize the
// prompt to the same ids and generate the same 16 greedy tokens (and text) as
// examples-c/simple.c. scripts/test-go.sh builds the example and sets
//   MINFER_MODEL       the SmolLM2 GGUF file
//   MINFER_SIMPLE_BIN  the compiled examples-c/simple.c

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

const (
	prompt   = "Hello my name is"
	nPredict = 16
)

func env(t *testing.T, name string) string {
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set (run scripts/test-go.sh)", name)
	}
	return v
}

// runSimple runs the C example and returns its stdout.
func runSimple(t *testing.T, args ...string) string {
	out, err := exec.Command(env(t, "MINFER_SIMPLE_BIN"), args...).Output()
	if err != nil {
		t.Fatalf("examples-c/simple %v: %v", args, err)
	}
	return string(out)
}

// ids parses the "NAME: ID ID ..." line of simple --ids.
func ids(t *testing.T, out, name string) []Token {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, name+":") {
			rest := strings.TrimPrefix(line, name+":")
			var v []Token
			for _, f := range strings.Fields(rest) {
				n, err := strconv.ParseInt(f, 10, 32)
				if err != nil {
					t.Fatalf("bad id %q in %q", f, line)
				}
				v = append(v, Token(n))
			}
			return v
		}
	}
	t.Fatalf("no %q line in the output of simple --ids:\n%s", name, out)
	return nil
}

func equal(a, b []Token) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestGreedyMatchesC(t *testing.T) {
	model := env(t, "MINFER_MODEL")
	cOut := runSimple(t, model, "-n", strconv.Itoa(nPredict), "--ids", prompt)
	cPrompt, cGen := ids(t, cOut, "prompt"), ids(t, cOut, "generated")
	if len(cGen) != nPredict {
		t.Fatalf("the C example generated %d tokens, expected %d", len(cGen), nPredict)
	}

	BackendInit()
	defer BackendFree()
	m, err := LoadModel(model)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()

	toks, err := m.Tokenize(prompt, true, true)
	if err != nil {
		t.Fatal(err)
	}
	if !equal(toks, cPrompt) {
		t.Fatalf("prompt ids %v, the C example's %v", toks, cPrompt)
	}

	ctx, err := m.NewContext(ContextOptions{NCtx: uint32(len(toks) + nPredict), NBatch: uint32(len(toks))})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Free()
	s := NewGreedySampler()
	defer s.Free()
	gen, err := ctx.Generate(m, s, toks, nPredict)
	if err != nil {
		t.Fatal(err)
	}
	if !equal(gen, cGen) {
		t.Fatalf("generated %v, the C example %v", gen, cGen)
	}
	t.Logf("generated ids (same as C): %v", gen)

	// The text: prompt and generated pieces, as the C example prints them.
	var text strings.Builder
	for _, tok := range append(append([]Token{}, toks...), gen...) {
		piece, err := m.TokenToPiece(tok)
		if err != nil {
			t.Fatal(err)
		}
		text.WriteString(piece)
	}
	cText := runSimple(t, model, "-n", strconv.Itoa(nPredict), prompt)
	if text.String()+"\n" != cText {
		t.Fatalf("text %q, the C example printed %q", text.String(), cText)
	}
	t.Logf("text: %q", text.String())
}

func TestVersionAndErrors(t *testing.T) {
	if v := Version(); !strings.HasPrefix(v, "minfer ") {
		t.Errorf("Version() = %q, want \"minfer <version>\"", v)
	}
	if info := SystemInfo(); !strings.HasPrefix(info, "CPU : ") {
		t.Errorf("SystemInfo() = %q", info)
	}
	if _, err := LoadModel("/nonexistent/model.gguf"); err == nil {
		t.Error("loading a missing file succeeded")
	}

	m, err := LoadModel(env(t, "MINFER_MODEL"))
	if err != nil {
		t.Fatal(err)
	}
	empty, err := m.Tokenize("", false, false)
	if err != nil || len(empty) != 0 {
		t.Errorf("empty text: %v, %v", empty, err)
	}
	// A NUL byte inside the text is tokenized, not a terminator.
	withNul, err := m.Tokenize("a\x00b", false, false)
	if err != nil || len(withNul) < 2 {
		t.Errorf("text with a NUL byte: %v, %v", withNul, err)
	}
	ctx, err := m.NewContext(ContextOptions{NCtx: 64})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctx.Decode([]Token{1 << 30}); err == nil {
		t.Error("decoding an out-of-range token id succeeded")
	}
	if _, err := m.TokenToPiece(-5); err == nil {
		t.Error("a piece for token -5")
	}
	ctx.Free()
	ctx.Free()
	m.Free()
	m.Free()
	if _, err := m.Tokenize("x", false, false); err == nil {
		t.Error("tokenize on a freed model succeeded")
	}
}
