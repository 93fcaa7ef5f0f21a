// Deterministic tokenizer test corpus: hand-picked edge cases plus seeded random mixtures of
// fragments from many scripts, code, numbers, whitespace runs, CRLF, emoji/ZWJ, combining marks,
// special tokens inside text and very long words. Same output on every run (xorshift PRNG).

export function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s / 4294967296;
  };
}

const FIXED = [
  "", " ", "  ", "\n", "\r\n", "\t", "a", "Hello world", "Hello, world!", " leading space",
  "trailing space ", "   three leading", "multiple    inner     spaces", "tabs\tand\t\ttabs",
  "line1\nline2\n\nline4", "crlf line\r\nsecond\r\n\r\nthird\r\n", "mixed \r\n \n\r \r\r\n\n",
  "\n\n\n\n", "  \n  \n  ", "end with newlines\n\n", " \t \u00a0 \u3000 ", "nbsp\u00a0between\u00a0words",
  "next line\u0085char", "zero\u200bwidth\u200bspace", "\ufeffBOM at start", "rtl \u200fmark\u200e here",
  "I'm here, you're there, he's gone, we've been, they'll go, I'd say", "DON'T SHOUT I'M HERE 'S 'T 'RE",
  "it's 'quoted' and \"double\" and `back`", "O'Neil's cat's toy", "rock'n'roll",
  "1", "12", "123", "1234", "12345", "1234567890", "3.14159265358979", "-42", "+7", "1,000,000.00",
  "0x1F 0b1010 0o777 1e-10 6.022e23", "2024-01-15T10:30:00Z", "v1.2.3-beta+build.45", "$1,234.56 €99 ¥1000 £5",
  "phone: +1 (555) 123-4567", "١٢٣٤٥ ٠٩", "一二三 四五六", "५६७ ๓๔๕", "①②③ ⅠⅡⅢ ½ ¾ ²³",
  "def f(x):\n    return x ** 2\n", "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}",
  "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); }", "{\"key\": [1, 2, {\"nested\": null}], \"b\": true}",
  "SELECT * FROM users WHERE id = 42 AND name LIKE '%bob%';", "x => x.map(y => y * 2).filter(Boolean)",
  "<div class=\"a\">text &amp; more</div>", "https://example.com/path?q=1&r=two#frag", "user@example.com",
  "    indented code\n        more indent\n", "a+b=c; d-e*f/g%h^i|j&k~l!m", "!!!???...,,,;;;:::", "((([[[{{{}}}]]])))",
  "--- === *** ### @@@", "...", "a...b", "'''", "\"\"\"docstring\"\"\"", "\\backslash\\path\\", "/* comment */ // line",
  "你好，世界！今天天气很好。", "日本語のテキストです。カタカナとひらがな。", "한국어 텍스트입니다", "Привет, мир! Как дела?",
  "Γειά σου Κόσμε", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก", "გამარჯობა", "Բարեւ աշխարհ",
  "வணக்கம் உலகம்", "ሰላም ልዑል", "Xin chào thế giới", "Zażółć gęślą jaźń", "Ærøskøbing Ğüşiöç", "Straße groß ẞ",
  "mixed中文and English混合", "emoji 😀😃😄😁", "👨‍👩‍👧‍👦 family", "🏳️‍🌈 flag", "🇺🇸🇯🇵🇩🇪 flags", "👍🏽👍🏿 tones",
  "🧑‍💻 coder 👩‍🔬 scientist", "❤️ ♥ ☺️ ✔️", "a😀b😀c", "😀😀😀😀😀😀😀😀😀😀", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙 𝟙𝟚𝟛", "𠀀𠀁 rare CJK ext B",
  "e\u0301 cafe\u0301 re\u0301sume\u0301", "n\u0303 a\u0308 o\u0302", "\u1100\u1161\u11a8 decomposed hangul",
  "A\u030a Å \u212b angstrom", "\u0301 leading combining", "z\u0336\u0335\u0334 zalgo z\u0351\u0352\u0353",
  "ﬁ ligature ﬀ ﬃ", "ＦＵＬＬＷＩＤＴＨ　ｔｅｘｔ", "control\u0001\u0002\u001f chars", "del\u007f char",
  "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n", "<|endoftext|>", "text<|endoftext|>more",
  "<|im_start|><|im_end|><|im_start|>", "<|im_st", "<|im_start|", "<|begin_of_text|>Hi<|eot_id|>",
  "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>", "<|reserved_special_token_5|>", "<think>\nreason\n</think>\n\nanswer",
  "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>",
  "< |im_start| >", "<<|im_end|>>", "  <|im_end|>  ", "\n<|im_end|>\n",
  "a".repeat(1000), "ab".repeat(700), "supercalifragilisticexpialidocious".repeat(40), "9".repeat(500),
  "1234567890".repeat(60), " ".repeat(300), "\n".repeat(200), "-".repeat(400), "=".repeat(257),
  "Pneumonoultramicroscopicsilicovolcanoconiosis", "Donaudampfschifffahrtselektrizitätenhauptbetriebswerkbauunterbeamtengesellschaft",
  "中".repeat(300), "😀".repeat(150), "\u0301".repeat(50), "a\u0301".repeat(200), "x ".repeat(500),
  "The quick brown fox jumps over the lazy dog. ".repeat(20),
];

const FRAGMENTS = [
  "the", "The", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "Hello", "world", "tokenizer",
  "don't", "I'll", "we're", "it's", "can't", "'s", "'ve", "ABC", "xyz", "CamelCaseWord", "snake_case_name",
  "0", "7", "42", "365", "2048", "123456789", "3.14", "1e9", "-0.5", "100%", "#1", "v2",
  "你好", "世界", "中文", "テスト", "カタカナ", "한국", "Привет", "мир", "Ελληνικά", "العربية", "עברית",
  "हिन्दी", "ไทย", "ქართული", "తెలుగు", "Tiếng", "Việt", "Ünïcödé", "naïve", "façade", "résumé",
  "e\u0301", "a\u0308", "\u1100\u1161", "😀", "👨‍👩‍👧", "🏳️‍🌈", "🇫🇷", "👍🏾", "✨", "🔥", "𝒜",
  "(", ")", "[", "]", "{", "}", "<", ">", "=", "==", "!=", "->", "=>", "::", ";", ",", ".", "...",
  "?", "!", "\"", "'", "`", "/", "\\", "|", "&&", "||", "+", "-", "*", "**", "%", "@", "#", "$", "^", "~", "_",
  "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|begin_of_text|>", "<|eot_id|>", "<think>", "</think>",
  "def", "return", "class", "import", "std::vector<int>", "printf(\"%s\\n\")", "x[i][j]", "a.b.c", "foo()",
  "\u00a0", "\u3000", "\u200d", "\u0085",
];

const SEPARATORS = ["", " ", " ", " ", "  ", "   ", "\n", "\r\n", "\t", "\n\n", " \n", "\n ", "\r\n\r\n", "    ", "\t\t"];

export function makeCorpus() {
  const r = rng(20240611);
  const pick = (a) => a[Math.floor(r() * a.length)];
  const out = [...FIXED];
  for (let i = 0; i < 520; ++i) {
    const n = 1 + Math.floor(r() * 14);
    let s = r() < 0.2 ? pick(SEPARATORS) : "";
    for (let k = 0; k < n; ++k) s += pick(FRAGMENTS) + pick(SEPARATORS);
    out.push(s);
  }
  return out;
}

// Random id sequences (model vocab only, so byte tokens can cut UTF-8 characters in half).
export function makeIdSequences(vocabSize, count) {
  const r = rng(77);
  const out = [];
  for (let i = 0; i < count; ++i) {
    const n = 1 + Math.floor(r() * 12);
    const ids = [];
    for (let k = 0; k < n; ++k) ids.push(r() < 0.5 ? Math.floor(r() * 256) : Math.floor(r() * vocabSize));
    out.push(ids);
  }
  return out;
}
