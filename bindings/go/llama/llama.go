// Package llama is a small cgo binding of libllama (minfer, or llama.cpp's
// library at the same ABI): load a GGUF model, tokenize, decode, sample.
//
// It links with -lllama and includes "llama.h". With the library installed by
// scripts/install.sh under /usr/local nothing else is needed; otherwise point
// cgo at it, e.g.
//
//	CGO_CFLAGS="$(pkg-config --cflags llama)" CGO_LDFLAGS="$(pkg-config --libs llama)" go build
//
// Handles are freed explicitly (Free); a model may be freed before its
// contexts (the library keeps it alive until the last one is freed).
package llama

/*
#cgo LDFLAGS: -lllama
#include <stdlib.h>
#include "llama.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// Token is a vocabulary id (llama_token).
type Token = int32

// Version is llama_version(): "minfer <version>" with minfer.
func Version() string { return C.GoString(C.llama_version()) }

// SystemInfo is llama_print_system_info(): "CPU : AVX2 = 1 | ... | ".
func SystemInfo() string { return C.GoString(C.llama_print_system_info()) }

// BackendInit and BackendFree bracket the use of the library (llama_backend_init/free).
func BackendInit() { C.llama_backend_init() }
func BackendFree() { C.llama_backend_free() }

// Model is a loaded GGUF model (llama_model) with its vocabulary.
type Model struct {
	p     *C.struct_llama_model
	vocab *C.struct_llama_vocab
}

// LoadModel loads a model with the library's default parameters.
func LoadModel(path string) (*Model, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	p := C.llama_model_load_from_file(cpath, C.llama_model_default_params())
	if p == nil {
		return nil, fmt.Errorf("llama: could not load model %q (the library logged why)", path)
	}
	return &Model{p: p, vocab: C.llama_model_get_vocab(p)}, nil
}

// Free releases the model; calling it twice is harmless.
func (m *Model) Free() {
	if m.p != nil {
		C.llama_model_free(m.p)
		m.p, m.vocab = nil, nil
	}
}

// Tokenize converts text to token ids (llama_tokenize); addSpecial adds
// BOS/EOS as the model asks, parseSpecial turns special-token text into ids.
func (m *Model) Tokenize(text string, addSpecial, parseSpecial bool) ([]Token, error) {
	if m.vocab == nil {
		return nil, errors.New("llama: model is freed")
	}
	// The text goes by pointer and length: it may contain NUL bytes.
	ctext := (*C.char)(C.CBytes([]byte(text)))
	defer C.free(unsafe.Pointer(ctext))
	n := C.llama_tokenize(m.vocab, ctext, C.int32_t(len(text)), nil, 0, C.bool(addSpecial), C.bool(parseSpecial))
	if n >= 0 { // 0 tokens fit in a 0-sized buffer
		return []Token{}, nil
	}
	tokens := make([]Token, -n)
	got := C.llama_tokenize(m.vocab, ctext, C.int32_t(len(text)), (*C.llama_token)(unsafe.Pointer(&tokens[0])),
		C.int32_t(len(tokens)), C.bool(addSpecial), C.bool(parseSpecial))
	if int(got) != len(tokens) {
		return nil, fmt.Errorf("llama: tokenize returned %d, expected %d tokens", got, len(tokens))
	}
	return tokens, nil
}

// TokenToPiece is the text of one token (llama_token_to_piece, special
// tokens rendered).
func (m *Model) TokenToPiece(t Token) (string, error) {
	if m.vocab == nil {
		return "", errors.New("llama: model is freed")
	}
	// The C function answers an invalid id with an empty piece (and a log
	// line); the binding says so as an error.
	if n := Token(C.llama_vocab_n_tokens(m.vocab)); t < 0 || t >= n {
		return "", fmt.Errorf("llama: token %d is out of range [0, %d)", t, n)
	}
	buf := make([]byte, 64)
	for {
		n := C.llama_token_to_piece(m.vocab, C.llama_token(t), (*C.char)(unsafe.Pointer(&buf[0])), C.int32_t(len(buf)), 0, true)
		if n >= 0 {
			return string(buf[:n]), nil
		}
		if int(-n) <= len(buf) { // a negative count that fits: an error, not a size
			return "", fmt.Errorf("llama: no piece for token %d", t)
		}
		buf = make([]byte, -n)
	}
}

// IsEOG tells whether a token ends generation (EOS, EOT, ...).
func (m *Model) IsEOG(t Token) bool {
	return m.vocab != nil && bool(C.llama_vocab_is_eog(m.vocab, C.llama_token(t)))
}

// ContextOptions override llama_context_default_params; zero keeps the default.
type ContextOptions struct {
	NCtx     uint32 // context size in tokens
	NBatch   uint32 // most tokens one Decode may take
	NThreads int32  // threads for generation and for batches
}

// Context holds the KV cache and the logits of the last Decode (llama_context).
type Context struct {
	p *C.struct_llama_context
}

// NewContext creates a context on the model.
func (m *Model) NewContext(opt ContextOptions) (*Context, error) {
	if m.p == nil {
		return nil, errors.New("llama: model is freed")
	}
	params := C.llama_context_default_params()
	if opt.NCtx != 0 {
		params.n_ctx = C.uint32_t(opt.NCtx)
	}
	if opt.NBatch != 0 {
		params.n_batch = C.uint32_t(opt.NBatch)
	}
	if opt.NThreads != 0 {
		params.n_threads = C.int32_t(opt.NThreads)
		params.n_threads_batch = C.int32_t(opt.NThreads)
	}
	p := C.llama_init_from_model(m.p, params)
	if p == nil {
		return nil, errors.New("llama: could not create the context (the library logged why)")
	}
	return &Context{p: p}, nil
}

// Free releases the context; calling it twice is harmless.
func (c *Context) Free() {
	if c.p != nil {
		C.llama_free(c.p)
		c.p = nil
	}
}

// Decode runs the tokens as the next positions of sequence 0
// (llama_batch_get_one); the logits of the last one are kept for sampling.
func (c *Context) Decode(tokens []Token) error {
	if c.p == nil {
		return errors.New("llama: context is freed")
	}
	if len(tokens) == 0 {
		return errors.New("llama: decode of no tokens")
	}
	// The batch points at the tokens: C memory, so no Go pointer sits in the
	// struct passed to C.
	size := C.size_t(len(tokens)) * C.size_t(unsafe.Sizeof(C.llama_token(0)))
	buf := (*C.llama_token)(C.malloc(size))
	defer C.free(unsafe.Pointer(buf))
	copy(unsafe.Slice((*Token)(unsafe.Pointer(buf)), len(tokens)), tokens)
	if rc := C.llama_decode(c.p, C.llama_batch_get_one(buf, C.int32_t(len(tokens)))); rc != 0 {
		return fmt.Errorf("llama: decode failed (%d)", int(rc))
	}
	return nil
}

// Sampler chooses the next token from a context's logits (llama_sampler).
type Sampler struct {
	p *C.struct_llama_sampler
}

// NewGreedySampler picks the most likely token (a chain holding the greedy sampler).
func NewGreedySampler() *Sampler {
	chain := C.llama_sampler_chain_init(C.llama_sampler_chain_default_params())
	C.llama_sampler_chain_add(chain, C.llama_sampler_init_greedy())
	return &Sampler{p: chain}
}

// Sample picks a token from the logits of the last decoded token and
// accepts it (llama_sampler_sample with idx -1).
func (s *Sampler) Sample(c *Context) (Token, error) {
	if s.p == nil || c.p == nil {
		return 0, errors.New("llama: sampler or context is freed")
	}
	return Token(C.llama_sampler_sample(s.p, c.p, -1)), nil
}

// Free releases the sampler; calling it twice is harmless.
func (s *Sampler) Free() {
	if s.p != nil {
		C.llama_sampler_free(s.p)
		s.p = nil
	}
}

// Generate decodes the prompt, then samples up to n tokens one decode at a
// time, stopping early at an end-of-generation token (not included).
func (c *Context) Generate(m *Model, s *Sampler, prompt []Token, n int) ([]Token, error) {
	out := make([]Token, 0, n)
	batch := prompt
	for len(out) < n {
		if err := c.Decode(batch); err != nil {
			return out, err
		}
		t, err := s.Sample(c)
		if err != nil {
			return out, err
		}
		if m.IsEOG(t) {
			break
		}
		out = append(out, t)
		batch = []Token{t}
	}
	return out, nil
}
