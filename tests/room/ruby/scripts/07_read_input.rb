text = File.read("/请求/in.txt")
lines = text.lines
puts "lines: #{lines.size}"
puts "words: #{text.split.size}"
puts "longest: #{lines.max_by(&:length).strip}"
File.foreach("/请求/in.txt").with_index(1) { |l, i| puts "#{i}: #{l.upcase}" }
puts File.exist?("/请求/in.txt"), File.exist?("/请求/missing.txt")
puts File.size("/请求/in.txt")
