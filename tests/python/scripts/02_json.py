import json

doc = {"name": "peri", "n": [1, 2.5, None, True], "nested": {"k": "v", "ü": "ß"}}
s = json.dumps(doc, sort_keys=True)
print(s)
print(json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=True))
back = json.loads(s)
print(back == doc, type(back["n"][1]).__name__)
try:
    json.loads("{bad json}")
except json.JSONDecodeError as e:
    print("error:", e.msg, e.pos)
