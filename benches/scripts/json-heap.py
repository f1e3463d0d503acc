"""A service holding a parsed JSON document: 250,000 order records (nested dicts, lists,
strings, floats) parsed from their JSON text, kept alive for pagebench capture."""
import json, random, time
random.seed(5)
records = [{"id": i, "user": {"name": "user%d" % i, "email": "u%d@example.net" % i, "age": 18 + i % 60},
            "items": [{"sku": "SKU-%06d" % random.randrange(10**6), "qty": random.randrange(1, 9),
                       "price": round(random.uniform(1, 500), 2)} for _ in range(random.randrange(1, 6))],
            "status": random.choice(["new", "paid", "shipped", "returned"]),
            "ts": 1700000000 + i * 37} for i in range(250000)]
doc = json.loads(json.dumps(records))
del records
print("ready", flush=True)
time.sleep(120)
