"""The example prompts, each written once: the Rounds page's examples, the Lab's comparison's, the recorded
examples' and the benchmark's all take theirs from here. Code drafts well, a fact fairly, a story poorly; a rewrite
copies its prompt.
"""

CODE_PROMPT = "Write a Python function that returns the n-th Fibonacci number."
PARIS_PROMPT = "What is the capital of France?"  # the Lab's toy pair drafts " Paris" for it
FACT_PROMPT = PARIS_PROMPT + " Answer in one sentence."
PARIS_MORE_PROMPT = "What is the capital of France, and what is it known for? Answer in two sentences."  # the
#                    recorded Paris example's: " Paris" comes sure, the sentence after it gives the models room to differ
STORY_PROMPT = "Write the opening of a short story about a lighthouse keeper."
CODE_ONLY_PROMPT = CODE_PROMPT + " Reply with the code only."  # the adaptive example's: its answer is code
REWRITE_PROMPT = """Rewrite this function with type hints. Reply with the code only.

def count_vowels(text, include_y):
    vowels = "aeiou"
    if include_y:
        vowels += "y"
    count = 0
    for char in text.lower():
        if char in vowels:
            count += 1
    return count
"""  # scalar arguments: the hinted signature is short, and the answer soon copies the body line by line
POOR_DRAFT_PROMPT = "Invent eight names for imaginary spices, each with a one-line note on its taste."  # the cost-aware
#                    example's: sampled made-up words, where the small draft guesses the large target's choices poorly
EXAMPLE_PROMPTS = {"code": CODE_PROMPT, "fact": FACT_PROMPT, "story": STORY_PROMPT}  # the Rounds page's examples
COMPARE_PROMPTS = {  # the Lab's: the answer to the first copies most of its prompt, to the second nothing
    "rewrite: the answer copies the prompt": REWRITE_PROMPT,
    "story: nothing to copy": STORY_PROMPT,
}
BENCH_PROMPTS = {  # the benchmark's, by kind: two a kind (--prompts-per-type takes the first n)
    "code": [CODE_PROMPT,
             "Write a Python function that checks whether a string is a palindrome."],
    "factual": ["Explain in a short paragraph how photosynthesis works.",
                "Describe the water cycle in a short paragraph."],
    "story": [STORY_PROMPT,
              "Tell a short bedtime story about a dragon who is afraid of the dark."],
    "rewrite": ["Rewrite this function with type hints and a docstring, keeping the body the same:\n\n"
                "def moving_average(values, window):\n    out = []\n    for i in range(len(values) - window + 1):\n"
                "        chunk = values[i:i + window]\n        out.append(sum(chunk) / window)\n    return out\n",
                "Add comments to this code without changing it:\n\ndef merge(a, b):\n    i = j = 0\n"
                "    result = []\n    while i < len(a) and j < len(b):\n        if a[i] <= b[j]:\n"
                "            result.append(a[i])\n            i += 1\n        else:\n            result.append(b[j])\n"
                "            j += 1\n    return result + a[i:] + b[j:]\n"],
    "json": ["Give a JSON object describing a book, with the fields title, author, year and tags. Reply with the JSON "
             "only.",
             "Write a JSON array of three users, each with an id, a name and an email. Reply with the JSON only."],
}
