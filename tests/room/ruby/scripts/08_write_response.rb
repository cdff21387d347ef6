File.write("/响应/结果.txt", "答案是 42\n")
File.open("/响应/list.txt", "w") do |f|
  3.times { |i| f.puts "line #{i}" }
end
Dir.mkdir("/数据") rescue nil
File.write("/数据/state.txt", "saved")
puts File.read("/响应/结果.txt")
File.open("/响应/list.txt", "a") { |f| f.write("appended\n") }
puts File.readlines("/响应/list.txt").size
