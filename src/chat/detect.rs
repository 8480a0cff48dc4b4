//! `llm_chat_detect_template`: a template name, or the reference's substring
//! heuristics over a model's Jinja template text. The order of the checks is
//! the reference's and matters (the first match wins).

use super::{from_name, Template};

/// The built-in template for `tmpl` (a name of [`super::NAMES`] or a Jinja
/// template's text), or `None` when the reference does not recognize it.
pub fn detect(tmpl: &[u8]) -> Option<Template> {
    use Template::*;
    if let Some(t) = from_name(tmpl) {
        return Some(t);
    }
    let has = |needle: &str| contains(tmpl, needle.as_bytes());

    let t = if has("<|im_start|>") {
        if has("<|im_sep|>") {
            Phi4
        } else if has("<end_of_utterance>") {
            Smolvlm // <|im_start|> is SmolVLM's BOS, but it is not chatml
        } else {
            Chatml
        }
    } else if tmpl.starts_with(b"mistral") || has("[INST]") {
        if has("[SYSTEM_PROMPT]") {
            MistralV7
        } else if has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]") {
            // the official mistral v1, v3 and v3-tekken templates
            if has(" [INST]") {
                MistralV1
            } else if has("\"[INST]\"") {
                MistralV3Tekken
            } else {
                MistralV3
            }
        } else if has("content.strip()") {
            Llama2SysStrip
        } else if has("bos_token + '[INST]") {
            Llama2SysBos
        } else if has("<<SYS>>") {
            Llama2Sys
        } else {
            Llama2
        }
    } else if has("<|assistant|>") && has("<|end|>") {
        Phi3
    } else if has("[gMASK]<sop>") {
        Chatglm4
    } else if has("<|assistant|>") && has("<|user|>") {
        if has("<|tool_declare|>") {
            ExaoneMoe
        } else if has("</s>") {
            Falcon3
        } else {
            Glmedge
        }
    } else if has("<|{{ item['role'] }}|>") && has("<|begin_of_image|>") {
        Glmedge
    } else if has("<|user|>") && has("<|endoftext|>") {
        Zephyr
    } else if has("bos_token + message['role']") {
        Monarch
    } else if has("<start_of_turn>") {
        Gemma
    } else if has("'\\n\\nAssistant: ' + eos_token") {
        Orion // OrionStarAI/Orion-14B-Chat
    } else if has("GPT4 Correct ") {
        Openchat // openchat/openchat-3.5-0106
    } else if has("USER: ") && has("ASSISTANT: ") {
        // eachadea/vicuna-13b-1.1 (and the Orca variant)
        if has("SYSTEM: ") {
            VicunaOrca
        } else {
            Vicuna
        }
    } else if has("### Instruction:") && has("<|EOT|>") {
        Deepseek // deepseek-ai/deepseek-coder-33b-instruct
    } else if has("<|START_OF_TURN_TOKEN|>") && has("<|USER_TOKEN|>") {
        CommandR // CohereForAI/c4ai-command-r-plus
    } else if has("<|start_header_id|>") && has("<|end_header_id|>") {
        Llama3
    } else if has("[gMASK]sop") {
        Chatglm3 // chatglm3-6b
    } else if has("<用户>") {
        Minicpm // MiniCPM-3B-OpenHermes-2.5-v2
    } else if has("'Assistant: ' + message['content'] + eos_token") {
        Deepseek2
    } else if has("<｜Assistant｜>") && has("<｜User｜>") && has("<｜end▁of▁sentence｜>") {
        Deepseek3
    } else if has("[|system|]") && has("[|assistant|]") && has("[|endofturn|]") {
        if has("[|tool|]") {
            Exaone4
        } else {
            Exaone3 // EXAONE-3.0-7.8B-Instruct
        }
    } else if has("rwkv-world") || has("{{- 'User: ' + message['content']|trim + '\\n\\n' -}}") {
        RwkvWorld
    } else if has("<|start_of_role|>") {
        if has("<tool_call>") || has("<tools>") {
            if has("g4_default_system_message") {
                Granite40
            } else {
                Granite41
            }
        } else {
            Granite3x
        }
    } else if has("message['role'] + additional_special_tokens[0] + message['content'] + additional_special_tokens[1]")
    {
        Gigachat
    } else if has("<|role_start|>") {
        Megrez
    } else if has(" Ассистент:") {
        Yandex
    } else if has("<role>ASSISTANT</role>") && has("'HUMAN'") {
        Bailing
    } else if has("<role>ASSISTANT</role>") && has("\"HUMAN\"") && has("<think>") {
        BailingThink
    } else if has("<role>ASSISTANT</role>") && has("<role>HUMAN</role>") && has("<|role_end|>") {
        Bailing2
    } else if has("<|header_start|>") && has("<|header_end|>") {
        Llama4
    } else if has("<|endofuserprompt|>") {
        Dots1
    } else if has("<|extra_0|>") && has("<|extra_4|>") {
        HunyuanMoe
    } else if has("<|start|>") && has("<|channel|>") {
        OpenaiMoe
    } else if has("<｜hy_Assistant｜>") && has("<｜hy_begin▁of▁sentence｜>") {
        HunyuanVl
    } else if has("<｜hy_Assistant｜>") && has("<｜hy_place▁holder▁no▁3｜>") {
        HunyuanDense
    } else if has("<|im_assistant|>assistant<|im_middle|>") {
        KimiK2
    } else if has("<seed:bos>") {
        SeedOss
    } else if has("'Assistant: '  + message['content'] + '<|separator|>") {
        Grok2
    } else if has("[unused9]系统：[unused10]") {
        PanguEmbed
    } else if has("<|begin|>") && has("<|end|>") && has("<|content|>") {
        SolarOpen
    } else {
        return None;
    };
    Some(t)
}

/// Whether `needle` (non-empty) occurs in `haystack`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_win_over_heuristics() {
        assert_eq!(detect(b"mistral-v7-tekken"), Some(Template::MistralV7Tekken));
        assert_eq!(detect(b"deepseek-ocr"), Some(Template::DeepseekOcr));
        // not a name, but starts with "mistral": a llama2 variant
        assert_eq!(detect(b"mistral"), Some(Template::Llama2));
    }

    #[test]
    fn heuristics_follow_the_reference_order() {
        assert_eq!(detect(b"{{'<|im_start|>' + role}}"), Some(Template::Chatml));
        assert_eq!(detect(b"<|im_start|><|im_sep|>"), Some(Template::Phi4));
        assert_eq!(detect(b"[INST] <<SYS>> content.strip()"), Some(Template::Llama2SysStrip));
        assert_eq!(detect(b"[AVAILABLE_TOOLS] \"[INST]\""), Some(Template::MistralV3Tekken));
        assert_eq!(detect(b"<|endofuserprompt|>"), Some(Template::Dots1));
        assert_eq!(detect("<用户>".as_bytes()), Some(Template::Minicpm));
        assert_eq!(detect(b""), None);
        assert_eq!(detect(b"ChatML"), None);
    }
}
