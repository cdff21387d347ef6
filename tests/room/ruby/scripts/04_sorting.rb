a = [5, 3, 9, 1, 7, 2, 8]
puts a.sort.join(" ")
puts a.sort { |x, y| y <=> x }.join(" ")
puts a.max, a.min, a.minmax.join("..")
words = %w[pear fig banana kiwi apple]
puts words.sort.join(" ")
puts words.sort_by { |w| [w.length, w] }.join(" ")
people = [["ann", 31], ["bob", 25], ["cy", 31], ["di", 22]]
puts people.sort_by.with_index { |(n, age), i| [-age, i] }.map(&:first).join(",")
def qsort(xs)
  return xs if xs.size <= 1
  pivot, *rest = xs
  qsort(rest.select { |x| x < pivot }) + [pivot] + qsort(rest.reject { |x| x < pivot })
end
puts qsort([3, 6, 1, 8, 2, 9, 4]).inspect
puts (1..20).to_a.shuffle(random: Random.new(1)).sort == (1..20).to_a
