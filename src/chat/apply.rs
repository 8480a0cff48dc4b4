//! `llm_chat_apply_template`: each built-in template's formatting, ported
//! branch by branch from the reference (same roles recognized, same trims,
//! same behaviour on unusual roles), so the bytes are identical.

use super::{Message, Template};

/// Appends each part's bytes (`&str`, `&[u8]`, `Vec<u8>` …) to `out`.
macro_rules! put {
    ($out:expr, $($part:expr),+ $(,)?) => {
        { $( $out.extend_from_slice(AsRef::<[u8]>::as_ref(&$part)); )+ }
    };
}

/// The reference's `trim`: C-locale `isspace` (space, \t, \n, \v, \f, \r)
/// removed from both ends.
fn trim(s: &[u8]) -> &[u8] {
    let space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    let start = s.iter().position(|b| !space(b)).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !space(b)).map_or(start, |i| i + 1);
    &s[start..end]
}

/// The shape many templates share: `prefix`, then for each message
/// `open role mid content close` (the content trimmed or not), then
/// `assistant` when the caller asks for the assistant's turn.
struct Turns {
    prefix: &'static str,
    open: &'static str,
    mid: &'static str,
    close: &'static str,
    assistant: &'static str,
    trim: bool,
}

impl Turns {
    const NONE: Turns = Turns { prefix: "", open: "", mid: "", close: "", assistant: "", trim: false };

    fn write(&self, ss: &mut Vec<u8>, chat: &[Message], add_ass: bool) {
        put!(ss, self.prefix);
        for m in chat {
            let content = if self.trim { trim(m.content) } else { m.content };
            put!(ss, self.open, m.role, self.mid, content, self.close);
        }
        if add_ass {
            put!(ss, self.assistant);
        }
    }
}

/// C-locale `toupper` over every byte (ASCII letters only).
fn upper(s: &[u8]) -> Vec<u8> {
    s.to_ascii_uppercase()
}

/// The conversation formatted by template `t`; `add_ass` appends the
/// assistant's turn opener for templates that have one.
pub fn apply(t: Template, chat: &[Message], add_ass: bool) -> Vec<u8> {
    use Template::*;
    let mut ss: Vec<u8> = Vec::new();
    match t {
        Chatml => Turns {
            open: "<|im_start|>",
            mid: "\n",
            close: "<|im_end|>\n",
            assistant: "<|im_start|>assistant\n",
            ..Turns::NONE
        }
        .write(&mut ss, chat, add_ass),
        MistralV7 | MistralV7Tekken => {
            let space = if t == MistralV7 { " " } else { "" };
            for m in chat {
                match m.role {
                    b"system" => put!(ss, "[SYSTEM_PROMPT]", space, m.content, "[/SYSTEM_PROMPT]"),
                    b"user" => put!(ss, "[INST]", space, m.content, "[/INST]"),
                    _ => put!(ss, space, m.content, "</s>"),
                }
            }
        }
        MistralV1 | MistralV3 | MistralV3Tekken => {
            let leading = if t == MistralV1 { " " } else { "" };
            let trailing = if t == MistralV3Tekken { "" } else { " " };
            let mut inside_turn = false;
            for m in chat {
                if !inside_turn {
                    put!(ss, leading, "[INST]", trailing);
                    inside_turn = true;
                }
                match m.role {
                    b"system" => put!(ss, m.content, "\n\n"),
                    b"user" => put!(ss, m.content, leading, "[/INST]"),
                    _ => {
                        let content = if t == MistralV3 { trim(m.content) } else { m.content };
                        put!(ss, trailing, content, "</s>");
                        inside_turn = false;
                    }
                }
            }
        }
        Llama2 | Llama2Sys | Llama2SysBos | Llama2SysStrip => {
            let system_supported = t != Llama2;
            let bos_inside_history = t == Llama2SysBos;
            let mut inside_turn = true; // no BOS at the beginning
            put!(ss, "[INST] ");
            for m in chat {
                let content = if t == Llama2SysStrip { trim(m.content) } else { m.content };
                if !inside_turn {
                    inside_turn = true;
                    put!(ss, if bos_inside_history { "<s>[INST] " } else { "[INST] " });
                }
                match m.role {
                    b"system" if system_supported => put!(ss, "<<SYS>>\n", content, "\n<</SYS>>\n\n"),
                    // without system support it is still kept, in the first message
                    b"system" => put!(ss, content, "\n"),
                    b"user" => put!(ss, content, " [/INST]"),
                    _ => {
                        put!(ss, content, "</s>");
                        inside_turn = false;
                    }
                }
            }
        }
        Phi3 | Falcon3 | Zephyr => Turns {
            open: "<|",
            mid: "|>\n",
            close: match t {
                Phi3 => "<|end|>\n",
                Falcon3 => "\n",
                _ => "<|endoftext|>\n",
            },
            assistant: "<|assistant|>\n",
            ..Turns::NONE
        }
        .write(&mut ss, chat, add_ass),
        Phi4 => Turns {
            open: "<|im_start|>",
            mid: "<|im_sep|>",
            close: "<|im_end|>",
            assistant: "<|im_start|>assistant<|im_sep|>",
            ..Turns::NONE
        }
        .write(&mut ss, chat, add_ass),
        Monarch => {
            // mlabonne/AlphaMonarch-7B: <s> inside the history, not before the first message
            for (i, m) in chat.iter().enumerate() {
                put!(ss, if i == 0 { "" } else { "<s>" }, m.role, "\n", m.content, "</s>\n");
            }
            if add_ass {
                put!(ss, "<s>assistant\n");
            }
        }
        Gemma => {
            // no system role: system texts are merged into the next user turn
            let mut system_prompt: Vec<u8> = Vec::new();
            for m in chat {
                if m.role == b"system" {
                    put!(system_prompt, trim(m.content));
                    continue;
                }
                let role = if m.role == b"assistant" { &b"model"[..] } else { m.role };
                put!(ss, "<start_of_turn>", role, "\n");
                if !system_prompt.is_empty() && role != b"model" {
                    put!(ss, system_prompt, "\n\n");
                    system_prompt.clear();
                }
                put!(ss, trim(m.content), "<end_of_turn>\n");
            }
            if add_ass {
                put!(ss, "<start_of_turn>model\n");
            }
        }
        Orion => {
            let mut system_prompt: Vec<u8> = Vec::new();
            for m in chat {
                match m.role {
                    b"system" => put!(system_prompt, m.content),
                    b"user" => {
                        put!(ss, "Human: ");
                        if !system_prompt.is_empty() {
                            put!(ss, system_prompt, "\n\n");
                            system_prompt.clear();
                        }
                        put!(ss, m.content, "\n\nAssistant: </s>");
                    }
                    _ => put!(ss, m.content, "</s>"),
                }
            }
        }
        Openchat => {
            for m in chat {
                if m.role == b"system" {
                    put!(ss, m.content, "<|end_of_turn|>");
                } else {
                    let mut role = m.role.to_vec();
                    if let Some(first) = role.first_mut() {
                        first.make_ascii_uppercase();
                    }
                    put!(ss, "GPT4 Correct ", role, ": ", m.content, "<|end_of_turn|>");
                }
            }
            if add_ass {
                put!(ss, "GPT4 Correct Assistant:");
            }
        }
        Vicuna | VicunaOrca => {
            for m in chat {
                match m.role {
                    b"system" if t == VicunaOrca => put!(ss, "SYSTEM: ", m.content, "\n"),
                    b"system" => put!(ss, m.content, "\n\n"),
                    b"user" => put!(ss, "USER: ", m.content, "\n"),
                    b"assistant" => put!(ss, "ASSISTANT: ", m.content, "</s>\n"),
                    _ => {}
                }
            }
            if add_ass {
                put!(ss, "ASSISTANT:");
            }
        }
        Deepseek => {
            for m in chat {
                match m.role {
                    b"system" => put!(ss, m.content),
                    b"user" => put!(ss, "### Instruction:\n", m.content, "\n"),
                    b"assistant" => put!(ss, "### Response:\n", m.content, "\n<|EOT|>\n"),
                    _ => {}
                }
            }
            if add_ass {
                put!(ss, "### Response:\n");
            }
        }
        CommandR => {
            for m in chat {
                let token = match m.role {
                    b"system" => "<|SYSTEM_TOKEN|>",
                    b"user" => "<|USER_TOKEN|>",
                    b"assistant" => "<|CHATBOT_TOKEN|>",
                    _ => continue,
                };
                put!(ss, "<|START_OF_TURN_TOKEN|>", token, trim(m.content), "<|END_OF_TURN_TOKEN|>");
            }
            if add_ass {
                put!(ss, "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>");
            }
        }
        Llama3 => Turns {
            open: "<|start_header_id|>",
            mid: "<|end_header_id|>\n\n",
            close: "<|eot_id|>",
            assistant: "<|start_header_id|>assistant<|end_header_id|>\n\n",
            trim: true,
            ..Turns::NONE
        }
        .write(&mut ss, chat, add_ass),
        Chatglm3 => Turns { prefix: "[gMASK]sop", open: "<|", mid: "|>\n ", assistant: "<|assistant|>", ..Turns::NONE }
            .write(&mut ss, chat, add_ass),
        Chatglm4 => {
            Turns { prefix: "[gMASK]<sop>", open: "<|", mid: "|>\n", assistant: "<|assistant|>\n", ..Turns::NONE }
                .write(&mut ss, chat, add_ass)
        }
        Glmedge => {
            Turns { open: "<|", mid: "|>\n", assistant: "<|assistant|>", ..Turns::NONE }.write(&mut ss, chat, add_ass)
        }
        Minicpm => {
            for m in chat {
                if m.role == b"user" {
                    put!(ss, "<用户>", trim(m.content), "<AI>");
                } else {
                    put!(ss, trim(m.content));
                }
            }
        }
        Deepseek2 => {
            for m in chat {
                match m.role {
                    b"system" => put!(ss, m.content, "\n\n"),
                    b"user" => put!(ss, "User: ", m.content, "\n\n"),
                    b"assistant" => put!(ss, "Assistant: ", m.content, "<｜end▁of▁sentence｜>"),
                    _ => {}
                }
            }
            if add_ass {
                put!(ss, "Assistant:");
            }
        }
        Deepseek3 => {
            for m in chat {
                match m.role {
                    b"system" => put!(ss, m.content, "\n\n"),
                    b"user" => put!(ss, "<｜User｜>", m.content),
                    b"assistant" => put!(ss, "<｜Assistant｜>", m.content, "<｜end▁of▁sentence｜>"),
                    _ => {}
                }
            }
            if add_ass {
                put!(ss, "<｜Assistant｜>");
            }
        }
        DeepseekOcr => {
            for m in chat {
                put!(ss, m.content); // no template
            }
        }
        Exaone3 | Exaone4 => {
            for m in chat {
                match m.role {
                    b"system" => put!(ss, "[|system|]", trim(m.content), "[|endofturn|]\n"),
                    b"user" => put!(ss, "[|user|]", trim(m.content), "\n"),
                    b"assistant" => put!(ss, "[|assistant|]", trim(m.content), "[|endofturn|]\n"),
                    b"tool" if t == Exaone4 => put!(ss, "[|tool|]", trim(m.content), "[|endofturn|]\n"),
                    _ => {}
                }
            }
            if add_ass {
                put!(ss, "[|assistant|]");
            }
        }
        ExaoneMoe => {
            for m in chat {
                let tag = match m.role {
                    b"system" => "<|system|>\n",
                    b"user" => "<|user|>\n",
                    b"assistant" => "<|assistant|>\n",
                    b"tool" => "<|tool|>\n",
                    _ => continue,
                };
                put!(ss, tag, trim(m.content), "<|endofturn|>\n");
            }
            if add_ass {
                put!(ss, "<|assistant|>\n");
            }
        }
        RwkvWorld => {
            // the model needs "\n\n" as its EOT token
            for (i, m) in chat.iter().enumerate() {
                match m.role {
                    b"system" => put!(ss, "System: ", trim(m.content), "\n\n"),
                    b"user" => {
                        put!(ss, "User: ", trim(m.content), "\n\n");
                        if i == chat.len() - 1 {
                            put!(ss, "Assistant:");
                        }
                    }
                    b"assistant" => put!(ss, "Assistant: ", trim(m.content), "\n\n"),
                    _ => {}
                }
            }
        }
        Granite3x => {
            for m in chat {
                put!(ss, "<|start_of_role|>", m.role, "<|end_of_role|>");
                if m.role == b"assistant_tool_call" {
                    put!(ss, "<|tool_call|>");
                }
                put!(ss, m.content, "<|end_of_text|>\n");
            }
            if add_ass {
                put!(ss, "<|start_of_role|>assistant<|end_of_role|>");
            }
        }
        Granite40 | Granite41 => {
            for m in chat {
                if m.role == b"assistant_tool_call" {
                    put!(ss, "<|start_of_role|>assistant<|end_of_role|><|tool_call|>");
                } else {
                    put!(ss, "<|start_of_role|>", m.role, "<|end_of_role|>");
                }
                put!(ss, m.content, "<|end_of_text|>\n");
            }
            if add_ass {
                put!(ss, "<|start_of_role|>assistant<|end_of_role|>");
            }
        }
        Gigachat => {
            let has_system = chat.first().is_some_and(|m| m.role == b"system");
            put!(ss, "<s>");
            if has_system {
                put!(ss, chat[0].content, "<|message_sep|>");
            }
            for m in &chat[usize::from(has_system)..] {
                match m.role {
                    b"user" => put!(
                        ss,
                        "user<|role_sep|>",
                        m.content,
                        "<|message_sep|>available functions<|role_sep|>[]<|message_sep|>"
                    ),
                    b"assistant" => put!(ss, "assistant<|role_sep|>", m.content, "<|message_sep|>"),
                    _ => {}
                }
            }
            if add_ass {
                put!(ss, "assistant<|role_sep|>");
            }
        }
        Megrez => Turns {
            open: "<|role_start|>",
            mid: "<|role_end|>",
            close: "<|turn_end|>",
            assistant: "<|role_start|>assistant<|role_end|>",
            ..Turns::NONE
        }
        .write(&mut ss, chat, add_ass),
        Yandex => {
            // "\n\n" is the EOT token
            for m in chat {
                match m.role {
                    b"user" => put!(ss, " Пользователь: ", m.content, "\n\n"),
                    b"assistant" => put!(ss, " Ассистент: ", m.content, "\n\n"),
                    _ => {}
                }
            }
            if add_ass {
                put!(ss, " Ассистент:[SEP]");
            }
        }
        Bailing | BailingThink | Bailing2 => {
            // Ling/Ring; Bailing2 (Ling 2.0) closes each turn and has a default system turn
            let closing = if t == Bailing2 { "<|role_end|>" } else { "" };
            if t == Bailing2 && chat.first().is_none_or(|m| m.role != b"system") {
                put!(ss, "<role>SYSTEM</role>detailed thinking off<|role_end|>");
            }
            for m in chat {
                let role = if m.role == b"user" { b"HUMAN".to_vec() } else { upper(m.role) };
                put!(ss, "<role>", role, "</role>", m.content, closing);
            }
            if add_ass {
                put!(ss, "<role>ASSISTANT</role>");
                if t == BailingThink {
                    put!(ss, "<think>");
                }
            }
        }
        Llama4 => Turns {
            open: "<|header_start|>",
            mid: "<|header_end|>\n\n",
            close: "<|eot|>",
            assistant: "<|header_start|>assistant<|header_end|>\n\n",
            trim: true,
            ..Turns::NONE
        }
        .write(&mut ss, chat, add_ass),
        Smolvlm => {
            put!(ss, "<|im_start|>"); // SmolVLM's BOS; the rest is not chatml
            for m in chat {
                match m.role {
                    b"system" => put!(ss, m.content, "\n\n"),
                    b"user" => put!(ss, "User: ", m.content, "<end_of_utterance>\n"),
                    _ => put!(ss, "Assistant: ", m.content, "<end_of_utterance>\n"),
                }
            }
            if add_ass {
                put!(ss, "Assistant:");
            }
        }
        Dots1 => {
            for m in chat {
                match m.role {
                    b"system" => put!(ss, "<|system|>", m.content, "<|endofsystem|>"),
                    b"user" => put!(ss, "<|userprompt|>", m.content, "<|endofuserprompt|>"),
                    _ => put!(ss, "<|response|>", m.content, "<|endofresponse|>"),
                }
            }
            if add_ass {
                put!(ss, "<|response|>");
            }
        }
        HunyuanMoe => {
            // tencent/Hunyuan-A13B-Instruct
            for m in chat {
                match m.role {
                    b"system" => put!(ss, "<|startoftext|>", m.content, "<|extra_4|>"),
                    b"assistant" => put!(ss, m.content, "<|eos|>"),
                    _ => put!(ss, "<|startoftext|>", m.content, "<|extra_0|>"),
                }
            }
        }
        OpenaiMoe => {
            // gpt-oss (the Harmony format)
            for m in chat {
                put!(ss, "<|start|>", m.role, "<|message|>", m.content);
                put!(ss, if m.role == b"assistant" { "<|return|>" } else { "<|end|>" });
            }
            if add_ass {
                put!(ss, "<|start|>assistant");
            }
        }
        HunyuanDense => {
            // tencent/Hunyuan-4B-Instruct
            for (i, m) in chat.iter().enumerate() {
                if i == 0 && m.role == b"system" {
                    put!(ss, m.content, "<｜hy_place▁holder▁no▁3｜>");
                }
                match m.role {
                    b"assistant" => put!(ss, "<｜hy_Assistant｜>", m.content, "<｜hy_place▁holder▁no▁2｜>"),
                    b"user" => put!(ss, "<｜hy_User｜>", m.content, "<｜hy_Assistant｜>"),
                    _ => {}
                }
            }
        }
        HunyuanVl => {
            // tencent/HunyuanOCR and HunyuanVL
            put!(ss, "<｜hy_begin▁of▁sentence｜>");
            for (i, m) in chat.iter().enumerate() {
                match m.role {
                    b"system" if i == 0 => put!(ss, m.content, "<｜hy_place▁holder▁no▁3｜>"),
                    b"user" => put!(ss, m.content, "<｜hy_User｜>"),
                    b"assistant" => put!(ss, m.content, "<｜hy_Assistant｜>"),
                    _ => {}
                }
            }
        }
        KimiK2 => {
            // moonshotai/Kimi-K2-Instruct
            for m in chat {
                let opener = match m.role {
                    b"system" => "<|im_system|>system<|im_middle|>",
                    b"user" => "<|im_user|>user<|im_middle|>",
                    b"assistant" => "<|im_assistant|>assistant<|im_middle|>",
                    b"tool" => "<|im_system|>tool<|im_middle|>",
                    _ => "",
                };
                put!(ss, opener, m.content, "<|im_end|>");
            }
            if add_ass {
                put!(ss, "<|im_assistant|>assistant<|im_middle|>");
            }
        }
        SeedOss => {
            for m in chat {
                let content = if m.role == b"assistant" { trim(m.content) } else { m.content };
                put!(ss, "<seed:bos>", m.role, "\n", content, "<seed:eos>");
            }
            if add_ass {
                put!(ss, "<seed:bos>assistant\n");
            }
        }
        Grok2 => {
            for m in chat {
                match m.role {
                    b"system" => put!(ss, "System: ", trim(m.content), "<|separator|>\n\n"),
                    b"user" => put!(ss, "Human: ", trim(m.content), "<|separator|>\n\n"),
                    b"assistant" => put!(ss, "Assistant: ", m.content, "<|separator|>\n\n"),
                    _ => {}
                }
            }
            if add_ass {
                put!(ss, "Assistant:");
            }
        }
        PanguEmbed => {
            // [unused9]系统：…[unused10], then 用户 (user), 助手 (assistant), 工具 (tool), 方法 (function)
            for (i, m) in chat.iter().enumerate() {
                if i == 0 && m.role != b"system" {
                    put!(ss, "[unused9]系统：[unused10]");
                }
                let speaker = match m.role {
                    b"system" => "系统",
                    b"user" => "用户",
                    b"assistant" => "助手",
                    b"tool" => "工具",
                    b"function" => "方法",
                    _ => continue,
                };
                put!(ss, "[unused9]", speaker, "：", m.content, "[unused10]");
            }
            if add_ass {
                put!(ss, "[unused9]助手：");
            }
        }
        SolarOpen => Turns {
            open: "<|begin|>",
            mid: "<|content|>",
            close: "<|end|>",
            assistant: "<|begin|>assistant",
            ..Turns::NONE
        }
        .write(&mut ss, chat, add_ass),
    }
    ss
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg<'a>(role: &'a str, content: &'a str) -> Message<'a> {
        Message { role: role.as_bytes(), content: content.as_bytes() }
    }

    #[test]
    fn trim_is_c_locale_isspace() {
        assert_eq!(trim(b" \t\n\x0b\x0c\rx y\r\n"), b"x y");
        assert_eq!(trim(b"   "), b"");
        assert_eq!(trim("\u{a0}x".as_bytes()), "\u{a0}x".as_bytes()); // not ASCII space
    }

    #[test]
    fn chatml_and_gemma_shapes() {
        let chat = [msg("system", "Be brief."), msg("user", " Hi ")];
        assert_eq!(
            apply(Template::Chatml, &chat, true),
            b"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n Hi <|im_end|>\n<|im_start|>assistant\n"
        );
        assert_eq!(
            apply(Template::Gemma, &chat, true),
            b"<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n"
        );
    }

    #[test]
    fn openchat_capitalizes_an_empty_role_safely() {
        let chat = [msg("", "x"), msg("user", "y")];
        assert_eq!(
            apply(Template::Openchat, &chat, false),
            b"GPT4 Correct : x<|end_of_turn|>GPT4 Correct User: y<|end_of_turn|>"
        );
    }
}
