require 'json'
orders = JSON.parse(File.read("/请求/in.txt"))
total = orders.sum { |o| o["qty"] * o["price"] }
puts format("%.2f", total)
by_item = orders.group_by { |o| o["item"] }.transform_values { |os| os.sum { _1["qty"] } }
File.write("/响应/summary.json", JSON.generate(by_item.sort.to_h) + "\n")
puts by_item.keys.sort.join(",")
