rows = [["name", "qty", "price"], ["apple", 3, 1.25], ["watermelon", 1, 3.5]]
rows.each { |n, q, p| puts n.to_s.ljust(12) + q.to_s.rjust(4) + p.to_s.rjust(7) }
text = <<~TXT
  Dear #{rows[1][0]},
    indented line
  total: #{"%.2f" % (3 * 1.25)}
TXT
puts text
printf("%-5s|%5d|%+.1e\n", "ab", 42, 12345.678)
puts 1234567.to_s.reverse.scan(/\d{1,3}/).join(",").reverse
puts "%c%c" % [82, "b"]
puts "tab\tsep", 'single #{not}'
$stdout.write("a", "b", "\n")
$stdout << "chained" << " " << 1 << "\n"
