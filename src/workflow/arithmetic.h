// The quickstart's synthetic verifiable task: "a+b=" -> the decimal sum. arithmetic_workflow
// (registered in arithmetic.cpp) chats [user: "a+b="] (one request with n = repeat_times; with
// workflow_args {"plain_text": true} a raw completion of "a+b=" without the chat template) and rewards 1.0 iff the sample stopped on EOS and its decoded text
// (whitespace-trimmed) is exactly the sum; metric "accuracy". Data generators write JSONL:
//   taskset rows {"prompt": "12+34=", "answer": "46"}   (format prompt_key=prompt, response_key=answer)
//   SFT rows     {"prompt": "12+34=", "response": "46"} where 1 - correct_fraction of the rows carry
//                the sum with the carries forgotten (each column's digit sum mod 10, the leading
//                column written in full: 87+26 -> "103"), always a wrong answer.
#pragma once

#include <cstdint>
#include <string>

namespace trinity::workflow {

// Operands are uniform `digits`-digit numbers (10^(d-1) .. 10^d - 1; 0..9 for d = 1).
void write_arithmetic_taskset(const std::string& path, int64_t n, uint64_t seed, int digits = 2);
// Exactly round(n * correct_fraction) correct rows at random positions; the wrong rows use operand
// pairs with a carry out of a non-leading column, so the carry-less sum differs from the true sum.
void write_arithmetic_sft(const std::string& path, int64_t n, double correct_fraction, uint64_t seed, int digits = 2);

// Column sums without carries, the leading column in full (18+25 -> 33, 87+26 -> 103, 99+99 -> 188).
int64_t sum_without_carry(int64_t a, int64_t b);

}  // namespace trinity::workflow
