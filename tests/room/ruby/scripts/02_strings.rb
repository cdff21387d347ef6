s = "Hello, 世界"
puts s.upcase, s.downcase, s.reverse
puts s.length, s.bytesize
puts s.center(21, "*")
puts s.gsub(/l+/) { |m| m.length.to_s }
puts s.sub("Hello", "Goodbye")
puts s.start_with?("He"), s.end_with?("界")
puts s.chars.first(3).join("-")
puts "%05.2f|%-6s|%x" % [3.14159, "ab", 255]
puts "a,b,,c".split(",").inspect
puts "  trim  ".strip + "|"
puts "snake_case_words".split("_").map(&:capitalize).join
puts "abc".succ, "az".succ
puts "ruby" * 3
puts s.encoding
