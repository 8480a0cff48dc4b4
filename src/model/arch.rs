//! Model architectures: the names GGUF files use, the ones minfer runs, and
//! the per-architecture facts the C API reports (rope type, size class).

/// An architecture minfer can run. Any other `general.architecture` loads
/// only with `vocab_only` (for its tokenizer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    Llama,
    Gemma3,
    Qwen2,
    Qwen3,
}

impl Arch {
    pub const ALL: [Arch; 4] = [Arch::Llama, Arch::Gemma3, Arch::Qwen2, Arch::Qwen3];

    /// The `general.architecture` string, which also prefixes its keys.
    pub fn name(self) -> &'static str {
        match self {
            Arch::Llama => "llama",
            Arch::Gemma3 => "gemma3",
            Arch::Qwen2 => "qwen2",
            Arch::Qwen3 => "qwen3",
        }
    }

    pub fn from_name(name: &str) -> Option<Arch> {
        Arch::ALL.into_iter().find(|a| a.name() == name)
    }

    /// llama_rope_type: NORM (0) for llama, NEOX (2) for the others, as the
    /// reference's llama_model_rope_type.
    pub fn rope_type(self) -> i32 {
        match self {
            Arch::Llama => 0,
            Arch::Gemma3 | Arch::Qwen2 | Arch::Qwen3 => 2,
        }
    }

    /// The size class the reference prints in a model's description ("?B"
    /// when its table has no entry), from its per-architecture tables.
    pub fn size_name(self, n_layer: u32, n_embd: u32, n_head: u32, n_head_kv: u32, n_vocab: u32) -> &'static str {
        match (self, n_layer) {
            (Arch::Llama, 16 | 22) => "1B",
            (Arch::Llama, 26 | 28) => "3B",
            (Arch::Llama, 30) => "256M",
            (Arch::Llama, 32) if n_vocab == 49152 => "3B",
            (Arch::Llama, 32) if n_vocab < 40000 => "7B",
            (Arch::Llama, 32 | 36) => "8B",
            (Arch::Llama, 40) => "13B",
            (Arch::Llama, 48) => "34B",
            (Arch::Llama, 60) => "30B",
            (Arch::Llama, 80) if n_head == n_head_kv => "65B",
            (Arch::Llama, 80) => "70B",
            (Arch::Gemma3, 18) => "270M",
            (Arch::Gemma3, 26) => "1B",
            (Arch::Gemma3, 32) => "8B",
            (Arch::Gemma3, 34) => "4B",
            (Arch::Gemma3, 48) => "12B",
            (Arch::Gemma3, 62) => "27B",
            (Arch::Qwen2, 24) if n_embd == 1024 => "0.5B",
            (Arch::Qwen2, 24) => "1B",
            (Arch::Qwen2, 28) if n_embd == 1536 => "1.5B",
            (Arch::Qwen2, 28 | 32) => "7B",
            (Arch::Qwen2, 36) => "3B",
            (Arch::Qwen2, 40) if n_head == 20 => "4B",
            (Arch::Qwen2, 40) => "13B",
            (Arch::Qwen2, 48) => "14B",
            (Arch::Qwen2, 64) => "32B",
            (Arch::Qwen2, 80) => "70B",
            (Arch::Qwen3, 28) if n_embd == 1024 => "0.6B",
            (Arch::Qwen3, 28) => "1.7B",
            (Arch::Qwen3, 36) if n_embd == 2560 => "4B",
            (Arch::Qwen3, 36) => "8B",
            (Arch::Qwen3, 40) => "14B",
            (Arch::Qwen3, 64) => "32B",
            _ => "?B",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_size_classes_follow_the_reference() {
        for a in Arch::ALL {
            assert_eq!(Arch::from_name(a.name()), Some(a));
        }
        assert_eq!(Arch::from_name("phi3"), None);
        // SmolLM2-135M has 30 layers: the reference calls it "256M".
        assert_eq!(Arch::Llama.size_name(30, 576, 9, 3, 49152), "256M");
        assert_eq!(Arch::Gemma3.size_name(18, 640, 4, 1, 262144), "270M");
        assert_eq!(Arch::Qwen3.size_name(3, 64, 4, 2, 1000), "?B");
    }
}
