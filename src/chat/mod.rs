//! Chat templates: the reference's built-in formatters (llama.cpp
//! src/llama-chat.cpp), not a Jinja engine.
//!
//! A template is chosen by its name (`"chatml"`, `"llama3"` …, the table
//! [`NAMES`]) or detected from a model's Jinja template text by the
//! reference's substring heuristics ([`detect`]); [`apply`] then formats a
//! conversation exactly as the reference does, byte for byte.

mod apply;
mod detect;

use std::ffi::CStr;

pub use apply::apply;
pub use detect::detect;

/// The reference's `llm_chat_template` (without UNKNOWN: "no template" is
/// `None` here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Template {
    Chatml,
    Llama2,
    Llama2Sys,
    Llama2SysBos,
    Llama2SysStrip,
    MistralV1,
    MistralV3,
    MistralV3Tekken,
    MistralV7,
    MistralV7Tekken,
    Phi3,
    Phi4,
    Falcon3,
    Zephyr,
    Monarch,
    Gemma,
    Orion,
    Openchat,
    Vicuna,
    VicunaOrca,
    Deepseek,
    Deepseek2,
    Deepseek3,
    DeepseekOcr,
    CommandR,
    Llama3,
    Chatglm3,
    Chatglm4,
    Glmedge,
    Minicpm,
    Exaone3,
    Exaone4,
    ExaoneMoe,
    RwkvWorld,
    Granite3x,
    Granite40,
    Granite41,
    Gigachat,
    Megrez,
    Yandex,
    Bailing,
    BailingThink,
    Bailing2,
    Llama4,
    Smolvlm,
    /// Detected only (no name in the table).
    Dots1,
    HunyuanMoe,
    OpenaiMoe,
    HunyuanDense,
    HunyuanVl,
    KimiK2,
    SeedOss,
    Grok2,
    PanguEmbed,
    SolarOpen,
}

/// The reference's `LLM_CHAT_TEMPLATES`, in its iteration order (a
/// `std::map<std::string, …>`: names sorted bytewise), which is the order
/// `llama_chat_builtin_templates` lists them in. The names are C strings so
/// that the C API can hand out pointers to them.
pub const NAMES: [(&CStr, Template); 54] = [
    (c"bailing", Template::Bailing),
    (c"bailing-think", Template::BailingThink),
    (c"bailing2", Template::Bailing2),
    (c"chatglm3", Template::Chatglm3),
    (c"chatglm4", Template::Chatglm4),
    (c"chatml", Template::Chatml),
    (c"command-r", Template::CommandR),
    (c"deepseek", Template::Deepseek),
    (c"deepseek-ocr", Template::DeepseekOcr),
    (c"deepseek2", Template::Deepseek2),
    (c"deepseek3", Template::Deepseek3),
    (c"exaone-moe", Template::ExaoneMoe),
    (c"exaone3", Template::Exaone3),
    (c"exaone4", Template::Exaone4),
    (c"falcon3", Template::Falcon3),
    (c"gemma", Template::Gemma),
    (c"gigachat", Template::Gigachat),
    (c"glmedge", Template::Glmedge),
    (c"gpt-oss", Template::OpenaiMoe),
    (c"granite", Template::Granite3x),
    (c"granite-4.0", Template::Granite40),
    (c"granite-4.1", Template::Granite41),
    (c"grok-2", Template::Grok2),
    (c"hunyuan-dense", Template::HunyuanDense),
    (c"hunyuan-moe", Template::HunyuanMoe),
    (c"hunyuan-vl", Template::HunyuanVl),
    (c"kimi-k2", Template::KimiK2),
    (c"llama2", Template::Llama2),
    (c"llama2-sys", Template::Llama2Sys),
    (c"llama2-sys-bos", Template::Llama2SysBos),
    (c"llama2-sys-strip", Template::Llama2SysStrip),
    (c"llama3", Template::Llama3),
    (c"llama4", Template::Llama4),
    (c"megrez", Template::Megrez),
    (c"minicpm", Template::Minicpm),
    (c"mistral-v1", Template::MistralV1),
    (c"mistral-v3", Template::MistralV3),
    (c"mistral-v3-tekken", Template::MistralV3Tekken),
    (c"mistral-v7", Template::MistralV7),
    (c"mistral-v7-tekken", Template::MistralV7Tekken),
    (c"monarch", Template::Monarch),
    (c"openchat", Template::Openchat),
    (c"orion", Template::Orion),
    (c"pangu-embedded", Template::PanguEmbed),
    (c"phi3", Template::Phi3),
    (c"phi4", Template::Phi4),
    (c"rwkv-world", Template::RwkvWorld),
    (c"seed_oss", Template::SeedOss),
    (c"smolvlm", Template::Smolvlm),
    (c"solar-open", Template::SolarOpen),
    (c"vicuna", Template::Vicuna),
    (c"vicuna-orca", Template::VicunaOrca),
    (c"yandex", Template::Yandex),
    (c"zephyr", Template::Zephyr),
];

/// The template with exactly this name (`llm_chat_template_from_str`).
pub fn from_name(name: &[u8]) -> Option<Template> {
    NAMES.iter().find(|(n, _)| n.to_bytes() == name).map(|&(_, t)| t)
}

/// One message of a conversation: the bytes of its role and content (C
/// strings without their NUL; not necessarily UTF-8).
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    pub role: &'a [u8],
    pub content: &'a [u8],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_in_std_map_order_and_unique() {
        // std::map<std::string> iterates in bytewise order; strictly
        // increasing also means no duplicates
        assert!(NAMES.windows(2).all(|w| w[0].0.to_bytes() < w[1].0.to_bytes()));
    }

    #[test]
    fn every_name_resolves_to_its_template() {
        for (name, t) in NAMES {
            assert_eq!(from_name(name.to_bytes()), Some(t));
        }
        assert_eq!(from_name(b"dots1"), None); // Dots1 is detected only
    }
}
