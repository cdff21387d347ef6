h = {"apple" => 3, "banana" => 1, "cherry" => 2}
h["date"] = 5
h.each { |k, v| puts "#{k}=#{v}" }
puts h.sort_by { |_, v| v }.map { |k, v| "#{k}:#{v}" }.join(" ")
puts h.select { |_, v| v > 2 }.keys.join(",")
puts h.values.sum
puts h.key?("apple"), h.fetch("zzz", "none")
counts = Hash.new(0)
"the quick brown fox jumps over the lazy dog the end".split.each { |w| counts[w] += 1 }
counts.sort_by { |w, c| [-c, w] }.first(3).each { |w, c| puts "#{w} #{c}" }
nested = Hash.new { |hash, k| hash[k] = [] }
[[:a, 1], [:b, 2], [:a, 3]].each { |k, v| nested[k] << v }
nested.each { |k, v| puts "#{k}: #{v.join(',')}" }
puts h.min_by { |_, v| v }.first
puts h.to_a.flatten.length
puts h.transform_values { |v| v * 10 }.values.join(" ")
