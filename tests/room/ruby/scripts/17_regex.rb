log = "2024-01-05 ERROR disk full; 2024-01-06 WARN slow; 2024-02-01 ERROR net down"
puts log.scan(/(\d{4})-(\d\d)-(\d\d) (ERROR|WARN)/).map { |y, m, d, l| "#{l}@#{m}/#{d}" }.join(" ")
if (m = log.match(/(?<year>\d+)-(?<mon>\d+)/))
  puts m[:year], m["mon"]
end
puts log.gsub(/\d{4}-\d\d-\d\d/) { |d| d.tr("-", "/") }
puts "a1b22c333".split(/\d+/).inspect
puts "CamelCaseString".gsub(/([a-z])([A-Z])/, '\1_\2').downcase
puts "x" =~ /y/ ? "yes" : "no"
puts "漢字とかな" =~ /かな/
puts "hello world".tr("lo", "01")
